/** The outcome of one time-limited call. */
export interface TimeLimiterEvent {
  /** The time limiter's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** `successful` or `failed` within the limit, or `timeout` (its own limit or the request deadline ran out). */
  readonly kind: 'successful' | 'failed' | 'timeout';
  /** The call's error (`failed`), or a `TimeoutExceededError` / `DeadlineExceededError` (`timeout`). */
  readonly error?: unknown;
}
