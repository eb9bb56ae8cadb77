/** How a call through a cache was answered. */
export type CacheResult = 'hit' | 'miss' | 'stale' | 'coalesced';

/** One call through a cache instance, once it is answered. */
export interface CacheResultEvent {
  /** The cache instance's name. */
  readonly name: string;
  /**
   * `hit`: a stored answer younger than `ttl`, without calling; `miss`: the
   * call went through (and its outcome, success or error, is the answer);
   * `stale`: the call failed and the last known good answered, within
   * `staleIfError`; `coalesced`: the call shared a concurrent call's outcome.
   */
  readonly result: CacheResult;
  /** For `hit` and `stale`: how old the stored answer was, in ms. */
  readonly ageMs?: number;
  /** The call is one of a method or pipeline with a fallback, which counts it (and a stale answer) in its fallback share. */
  readonly guarded: boolean;
}
