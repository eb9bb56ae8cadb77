import { isObservable } from 'rxjs';

/**
 * What a decorated method returns, as far as is known before calling it:
 * from its declared return type (`design:returntype`), or from being an
 * `async` function; `unknown` when neither tells.
 */
export type ReturnKind = 'promise' | 'observable' | 'unknown';

/** The composed pipeline stored on an instance: takes the call's argument array. */
export type Pipeline = (args: unknown[]) => unknown;

const PLAIN_TYPES = new Map<unknown, string>([
  [Number, 'Number'],
  [String, 'String'],
  [Boolean, 'Boolean'],
]);

/** The name of a declared return type that is a plain value (Number, String, Boolean), else `undefined`. */
export function plainReturnType(declared: unknown): string | undefined {
  return PLAIN_TYPES.get(declared);
}

/** What a method returns, from its declared return type or its function kind. */
export function returnKindOf(declared: unknown, method: (...args: unknown[]) => unknown): ReturnKind {
  if (typeof declared === 'function') {
    if (declared === Promise || declared.prototype instanceof Promise) return 'promise';
    if (isObservable(declared.prototype)) return 'observable';
  }
  return method.constructor?.name === 'AsyncFunction' ? 'promise' : 'unknown';
}
