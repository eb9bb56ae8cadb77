/** A retry budget: each success deposits `ratio` of a token, each retry withdraws one. */
export interface RetryBudgetConfig {
  /** Tokens deposited per successful call, in (0, 1]; 0.1 allows one retry per ten successes. */
  ratio: number;
  /** Most tokens the budget holds; it starts at half of this. */
  maxTokens: number;
}

const MILLI = 1000;

/**
 * A token bucket of retries, kept in integer milli-tokens so repeated
 * deposits of a ratio such as 0.1 never drift. Successes deposit `ratio` of
 * a token (up to `maxTokens`), each retry withdraws a whole token, and the
 * bucket starts half full.
 */
export class RetryBudget {
  private milliTokens: number;
  private deposit: number;
  private capacity: number;

  /** @param config - the instance's budget settings */
  constructor(config: RetryBudgetConfig) {
    this.deposit = Math.round(config.ratio * MILLI);
    this.capacity = config.maxTokens * MILLI;
    this.milliTokens = Math.floor(this.capacity / 2);
  }

  /**
   * @internal Deposits `config.ratio` per success and holds at most
   * `config.maxTokens` from now on, keeping the tokens it has (down to the new most).
   */
  reconfigure(config: RetryBudgetConfig): void {
    this.deposit = Math.round(config.ratio * MILLI);
    this.capacity = config.maxTokens * MILLI;
    if (this.milliTokens > this.capacity) this.milliTokens = this.capacity;
  }

  /** Tokens available now (fractional). */
  get tokens(): number {
    return this.milliTokens / MILLI;
  }

  /** Credits one successful call. */
  onSuccess(): void {
    const next = this.milliTokens + this.deposit;
    // Stryker disable next-line EqualityOperator: when equal, both branches store the same value
    this.milliTokens = next > this.capacity ? this.capacity : next;
  }

  /** Takes one token for a retry; false (and nothing taken) when less than one is left. */
  tryWithdraw(): boolean {
    if (this.milliTokens < MILLI) return false;
    this.milliTokens -= MILLI;
    return true;
  }
}
