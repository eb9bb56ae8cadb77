/** Errors a policy raised before the call it guards ran: that attempt never left. */
const refusals = new WeakSet<object>();

/**
 * @internal Marks `error` as a refusal: a policy raised it instead of
 * running the call it guards (open breaker, full bulkhead, no time left).
 */
export function refusal<E extends object>(error: E): E {
  refusals.add(error);
  return error;
}

/** @internal True when `error` was marked by {@link refusal}: the attempt that raised it never reached the method. */
export function isRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && refusals.has(error);
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
