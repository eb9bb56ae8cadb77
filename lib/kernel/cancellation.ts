import { Clock } from './clock';
import { contextStorage, DEFAULT_DEADLINE_HEADER, ResilienceContext } from './context';
import { isSuperseded } from './superseded-attempts';
import { isThenable } from './thenable';

/** Options of `execute(fn, options)`, on every policy and pipeline. */
export interface ExecuteOptions {
  /**
   * The caller's cancellation, for calls made outside any request scope:
   * once it aborts, no attempt, hedge or injected fault starts, every wait
   * ends at once, and the call settles at once (a later answer is
   * discarded). Inside a request scope the request's own cancellation
   * applies as well.
   */
  readonly signal?: AbortSignal;
  /**
   * The arguments of the call, for a pipeline used per key
   * (`registry.pipeline(name, { key: (...args) => string })`): its key
   * function reads them to pick the keys' instances. Ignored elsewhere.
   */
  readonly args?: readonly unknown[];
}

/** Errors that end an attempt with no outcome: the caller's cancellation, or an attempt that did not start. */
const withoutOutcome = new WeakSet<object>();

/**
 * @internal Marks `error` as ending its attempt with no outcome: no policy
 * records, retries, hedges or falls back on it, and every permit the
 * attempt held goes back.
 */
export function withoutOutcomeError<E extends object>(error: E): E {
  withoutOutcome.add(error);
  return error;
}

/** @internal True when `error` was marked by {@link withoutOutcomeError}: its attempt had no effect. */
export function hasNoOutcome(error: unknown): boolean {
  return typeof error === 'object' && error !== null && withoutOutcome.has(error);
}

/**
 * @internal The `AbortError` of a call its caller cancelled: a
 * `DOMException` named `AbortError`, as any aborted operation's, whose
 * `cause` is the caller's reason. Its own class lets the exception filter
 * answer for the reason (a request deadline's 504) without catching every
 * `DOMException`.
 */
export class CallerAbortError extends DOMException {
  constructor(reason: unknown) {
    super('the caller cancelled the call', { name: 'AbortError', cause: reason });
  }
}

/**
 * @internal The `AbortError` a cancelled call rejects with when no attempt of it
 * failed: its `cause` is the caller's reason (the signal's reason, the
 * request's `DeadlineExceededError`, the client that went away).
 */
export function callerAbortError(reason: unknown): CallerAbortError {
  return withoutOutcomeError(new CallerAbortError(reason));
}

/**
 * @internal The `AbortError` of the caller of `scope` (the nearest caller's
 * scope around it) when that caller has cancelled; `undefined` while it has
 * not, and outside any scope.
 */
export function callerCancellation(scope: ResilienceContext | undefined): CallerAbortError | undefined {
  const caller = scope?.caller;
  return caller?.aborted === true ? callerAbortError(caller.reason) : undefined;
}

/**
 * @internal What a call its caller cancelled rejects with: the last error
 * of an attempt that reached the method, when one failed (Resilience4j's
 * and cockatiel's rule), else an `AbortError` caused by the caller's reason.
 */
export function cancelledCallError(reason: unknown, lastError: unknown, failed: boolean): unknown {
  return failed ? lastError : callerAbortError(reason);
}

/**
 * @internal True when `error` ends its attempt with no outcome: marked so,
 * raised in an attempt cancelled because another one answered first (a
 * hedge), or the `AbortError` (or the abort reason itself) of a caller that
 * has cancelled. `scope` is the scope the outcome arrives in.
 */
export function isCancellation(
  error: unknown,
  scope: ResilienceContext | undefined = contextStorage.getStore(),
): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (withoutOutcome.has(error)) return true;
  if (scope === undefined) return false;
  if (isSuperseded(scope)) return true;
  if (!scope.aborted) return false;
  return error === scope.reason || (error as { name?: unknown }).name === 'AbortError';
}

/**
 * @internal Runs `call(arg)` for a caller that gave its own `signal`
 * (`execute(fn, { signal })`): in a scope that follows `signal` and the
 * scope the call was made in (whose deadline it keeps), disposed of when the
 * call settles. A signal already aborted runs nothing: the caller gets its
 * `AbortError`.
 */
export function underCallerSignal<A, R>(
  clock: Clock,
  signal: AbortSignal,
  call: (arg: A) => Promise<R>,
  arg: A,
): Promise<R> {
  if (signal.aborted) return Promise.reject(callerAbortError(signal.reason));
  const parent = contextStorage.getStore();
  const scope = new ResilienceContext(
    clock,
    parent?.deadline ?? Number.POSITIVE_INFINITY,
    parent?.header ?? DEFAULT_DEADLINE_HEADER,
    parent,
    false,
  );
  scope.follow(signal);
  return contextStorage.run(scope, call, arg).finally(() => scope.dispose());
}

/**
 * @internal The scope for work that must finish even when its caller goes
 * away (an idempotent request, whose answer is stored for the client's
 * retry with the same key): the current scope's deadline and header,
 * without its cancellation. Its signal still aborts at the deadline, for
 * the work to stop itself, but no call inside it is cut short: it has no
 * caller to cancel it. `undefined` outside any scope.
 */
export function detachedFromCaller(): ResilienceContext | undefined {
  const scope = contextStorage.getStore();
  if (scope === undefined) return undefined;
  const detached = new ResilienceContext(scope.clock, scope.deadline, scope.header);
  detached.shields = true;
  return detached;
}

/**
 * @internal Calls `invoke(arg)`, the method of one attempt, under the
 * caller's cancellation: a caller that has already cancelled gets no call
 * (the attempt rejects with its `AbortError`), and one that cancels while
 * the method runs gets that rejection at once, the method's later answer
 * discarded. Outside any scope it is a plain call.
 */
export function callCancellable<A, R>(invoke: (arg: A) => R | PromiseLike<R>, arg: A): R | PromiseLike<R> {
  const scope = contextStorage.getStore();
  const caller = scope?.caller;
  // Nothing can cancel a call made outside every caller's scope.
  if (caller === undefined) return invoke(arg);
  if (caller.aborted) return Promise.reject(callerAbortError(caller.reason));
  const pending = invoke(arg);
  return isThenable(pending) ? raceWithCaller(scope!, pending) : pending;
}

/**
 * `pending`, or the caller's `AbortError` as soon as the caller cancels,
 * whichever comes first. It listens to the nearest scope (`scope`: the
 * attempt's, which follows the caller's), so it lets go when the attempt
 * ends by its own time limit or a hedge's win, leaving the method's outcome
 * to the policy that ended it.
 */
function raceWithCaller<R>(scope: ResilienceContext, pending: PromiseLike<R>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const onAbort = (): void => {
      const caller = scope.caller;
      if (caller?.aborted === true) reject(callerAbortError(caller.reason));
    };
    scope.watch(onAbort);
    pending.then(
      (value) => {
        scope.unwatch(onAbort);
        resolve(value);
      },
      (error: unknown) => {
        scope.unwatch(onAbort);
        reject(error);
      },
    );
  });
}
