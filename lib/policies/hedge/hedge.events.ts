/** Another attempt of a hedged call started (the second attempt is the first hedge). */
export interface HedgeEvent {
  /** The hedge instance's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt that starts, 1-based: 2 for the first hedge. */
  readonly attempt: number;
  /** How long the attempts before it had gone unanswered, in ms (0 when it follows a failure at once). */
  readonly waitedMs: number;
}

/** A hedged call (one that started at least one hedge) got a successful answer. */
export interface HedgeWinnerEvent {
  /** The hedge instance's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt whose answer the call took, 1-based (1: the first attempt won after all). */
  readonly attempt: number;
  /** Attempts still running that were cancelled (their signals aborted). */
  readonly cancelled: number;
}

/** A hedge was due but the retry budget had no token for it. */
export interface HedgeBudgetDeniedEvent {
  /** The hedge instance's name. */
  readonly name: string;
  /** The key, for an instance used per key; else undefined. */
  readonly key?: string;
  /** The attempt that did not start, 1-based. */
  readonly attempt: number;
}
