/** Errors thrown by an injected fault; held weakly, so a marked error is collected as any other. */
const injected = new WeakSet<object>();

/** @internal Marks `error` as thrown by an injected fault, and returns it. */
export function markInjected<E extends Error>(error: E): E {
  injected.add(error);
  return error;
}

/**
 * @internal True when `error` was thrown by an injected fault rather than
 * by the real call: the tracing marks what it records of it as injected.
 */
export function isInjectedFault(error: unknown): boolean {
  return typeof error === 'object' && error !== null && injected.has(error);
}
