import { isMarkedRefusal, markRefusal, ResilienceError } from './errors';

/** Other objects a policy raised before the call it guards ran (the module's own errors carry the mark themselves). */
const refusals = new WeakSet<object>();

/**
 * @internal Marks `error` as a refusal: a policy raised it instead of
 * running the call it guards (open breaker, full bulkhead, no time left).
 */
export function refusal<E extends object>(error: E): E {
  if (error instanceof ResilienceError) markRefusal(error);
  else refusals.add(error);
  return error;
}

/** @internal True when `error` was marked by {@link refusal}: the attempt that raised it never reached the method. */
export function isRefusal(error: unknown): boolean {
  if (error instanceof ResilienceError) return isMarkedRefusal(error);
  return typeof error === 'object' && error !== null && refusals.has(error);
}

type Reject = (reason: unknown) => void;

let capturedReject: Reject | undefined;

/** A promise executor that hands its reject function over without a closure per promise. */
function captureReject(_resolve: unknown, reject: Reject): void {
  capturedReject = reject;
}

// Refused calls waiting for the microtask that rejects them, as reject function and error pairs.
const waitingRejects: (Reject | undefined)[] = [];
const waitingErrors: unknown[] = [];
let waiting = 0;
const SETTLED = Promise.resolve();

function rejectWaiting(): void {
  for (let i = 0; i < waiting; i++) {
    const reject = waitingRejects[i]!;
    const error = waitingErrors[i];
    waitingRejects[i] = undefined;
    waitingErrors[i] = undefined;
    reject(error);
  }
  waiting = 0;
}

/**
 * @internal A promise of a refused call, rejected with `error` in a
 * microtask, once the caller has had the chance to handle it. A promise
 * rejected before it has a handler costs Node an unhandled-rejection
 * record, dropped again when the caller's `catch` or `await` arrives;
 * under overload, where most calls are refused, that doubles a refusal's
 * cost. One microtask rejects every refusal made since the last one.
 */
export function refusedCall<T>(error: unknown): Promise<T> {
  const promise = new Promise<T>(captureReject);
  // A reaction on a settled promise: queueMicrotask on Node.js 20 builds an async resource and a bound function each time.
  if (waiting === 0) void SETTLED.then(rejectWaiting);
  waitingRejects[waiting] = capturedReject;
  waitingErrors[waiting] = error;
  waiting++;
  return promise;
}

/** Error codes of a connection that was never made: the request never left this process. */
const NEVER_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * @internal True when `error` (or its `cause`, as a failed `fetch` carries
 * it) says the connection was never made: refused, an unresolvable host, an
 * unreachable host or network. Like a refusal, such an attempt never
 * reached the dependency.
 */
export function neverSent(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, cause } = error as { code?: unknown; cause?: { code?: unknown } };
  if (typeof code === 'string') return NEVER_SENT_CODES.has(code);
  return (
    typeof cause === 'object' && cause !== null && typeof cause.code === 'string' && NEVER_SENT_CODES.has(cause.code)
  );
}

/** @internal True when the attempt that raised `error` never reached what it guards: a refusal, or a connection never made. */
export function neverReached(error: unknown): boolean {
  return isRefusal(error) || neverSent(error);
}

/**
 * @internal The outcome-unknown `error` of an earlier attempt, carrying the
 * refusal that ended the call as its `cause` (unless it already has one).
 */
export function withRefusalCause(error: unknown, cause: unknown): unknown {
  if (typeof error === 'object' && error !== null && !('cause' in error) && Object.isExtensible(error)) {
    Object.defineProperty(error, 'cause', { value: cause, writable: true, configurable: true });
  }
  return error;
}
