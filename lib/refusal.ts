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
