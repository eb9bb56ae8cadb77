import { contextStorage, ResilienceContext } from './context';

/** Attempt scopes cancelled because another attempt of the same call answered first. */
const superseded = new WeakSet<ResilienceContext>();

/**
 * @internal Aborts `scope` with `reason`, marking it as cancelled because
 * another attempt answered: what fails inside it afterwards is no failure
 * of the dependency.
 */
export function supersede(scope: ResilienceContext, reason: unknown): void {
  superseded.add(scope);
  scope.abort(reason);
}

/** @internal True when `scope` (the current one by default) or a scope around it was superseded. */
export function isSuperseded(scope: ResilienceContext | undefined = contextStorage.getStore()): boolean {
  for (let s = scope; s !== undefined; s = s.parent) if (superseded.has(s)) return true;
  return false;
}
