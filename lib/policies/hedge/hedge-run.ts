import { Subscription } from 'rxjs';
import { cancelledCallError, isCancellation } from '../../kernel/cancellation';
import { Clock, TimerHandle } from '../../kernel/clock';
import { ResilienceContext } from '../../kernel/context';
import { isRefusal, withRefusalCause } from '../../kernel/refusal';
import { supersede } from '../../kernel/superseded-attempts';
import type { HedgeConfig } from './hedge.config';

/** @internal What a hedged call or subscription asks of its hedge policy (the policy, without a cycle back to it). */
export interface HedgeDecisions {
  readonly clock: Clock;
  readonly config: HedgeConfig;
  delayUnder(settings: HedgeConfig): number;
  recordLatency(ms: number): void;
  admitHedge(attempt: number, parent: ResilienceContext | undefined): boolean;
  hedged(attempt: number, waitedMs: number): void;
  answered(attempt: number, cancelled: number, started: number, success: boolean): void;
}

/** The reason a losing attempt's signal is aborted with. */
export function supersededReason(): DOMException {
  return new DOMException('another hedged attempt answered first', 'AbortError');
}

/** One attempt of a hedged call or subscription. */
export interface HedgeAttempt {
  readonly number: number;
  readonly scope: ResilienceContext;
  readonly start: number;
  /** The attempt's subscription, on the Observable path. */
  subscription?: Subscription;
  settled: boolean;
}

/**
 * What a hedged call (promise path) and a hedged subscription (Observable
 * path) share: starting attempts, each in a scope of its own under the
 * caller's deadline; the hedge timer; handing over at once on a failure;
 * the error to end with when every attempt failed; and ending at once when
 * the scope the call was made in is cancelled.
 */
export abstract class HedgeRun {
  protected readonly attempts: HedgeAttempt[] = [];
  protected pending = 0;
  /** Set once the caller is gone (an unsubscribed Observable): no hedge starts after. */
  protected closed = false;
  // undefined while no hedge is due (TimerHandle admits it).
  private timer: TimerHandle;
  private lastStart = 0;
  /** The error of the latest attempt that reached the method, when one did. */
  private reached: unknown;
  private reachedAny = false;
  /** Listens to the cancellation of `parent` while the call runs; set only under a parent. */
  private onParentAbort: (() => void) | undefined;
  /** The settings in force when the call started, which it keeps to its end. */
  private readonly settings: HedgeConfig;

  /**
   * @param context - runs a hedge in the caller's async context, whichever context fired the timer (when someone listens)
   */
  constructor(
    protected readonly policy: HedgeDecisions,
    protected readonly parent: ResilienceContext | undefined,
    private readonly context: ((fn: () => void) => void) | undefined,
  ) {
    this.settings = policy.config;
  }

  /** True once an attempt's answer was taken: later answers are dropped. */
  protected abstract get decided(): boolean;

  /** Starts one more attempt. */
  protected abstract launch(): void;

  /** The scope the call was made in was cancelled while the call ran: it ends at once with `error`. */
  protected abstract cancelled(error: unknown): void;

  /**
   * Ends the call at once (through {@link HedgeRun.cancelled}) when `parent`
   * is cancelled before it ends; {@link HedgeRun.stopFollowing} stops that.
   * Call it under a parent that has not cancelled yet.
   */
  protected followParent(parent: ResilienceContext): void {
    const onAbort = (): void => {
      this.onParentAbort = undefined;
      this.closed = true;
      this.clearTimer();
      this.cancelled(cancelledCallError(parent.reason, this.reached, this.reachedAny));
    };
    this.onParentAbort = onAbort;
    parent.watch(onAbort);
  }

  /** Stops following the parent's cancellation: the call has ended. */
  protected stopFollowing(): void {
    const onAbort = this.onParentAbort;
    if (onAbort === undefined) return;
    this.onParentAbort = undefined;
    this.parent?.unwatch(onAbort);
  }

  /** A new attempt, in a scope of its own under the caller's deadline; the timer of the next hedge is armed. */
  protected newAttempt(): HedgeAttempt {
    const policy = this.policy;
    const parent = this.parent;
    const now = policy.clock.now();
    const scope = ResilienceContext.forAttempt(policy.clock, parent?.deadline ?? Number.POSITIVE_INFINITY, parent);
    const attempt: HedgeAttempt = { number: this.attempts.length + 1, scope, start: now, settled: false };
    this.attempts.push(attempt);
    this.pending++;
    this.lastStart = now;
    this.armTimer();
    return attempt;
  }

  /** True when the call's settings allow one more attempt. */
  private get mayHedge(): boolean {
    return this.attempts.length <= this.settings.maxHedgedAttempts;
  }

  /** Arms the timer of the next hedge, when one may follow and can start before the deadline. */
  private armTimer(): void {
    const policy = this.policy;
    if (!this.mayHedge) return;
    const delay = policy.delayUnder(this.settings);
    if (delay === Number.POSITIVE_INFINITY) return;
    if (this.parent !== undefined && delay >= this.parent.remaining()) return;
    this.timer = policy.clock.setTimeout(this.onDelay, delay);
  }

  private readonly onDelay = (): void => {
    this.timer = undefined;
    if (this.context !== undefined) this.context(this.hedgeNow);
    else this.hedgeNow();
  };

  private readonly hedgeNow = (): void => {
    if (this.decided || this.closed) return;
    const attempt = this.attempts.length + 1;
    // The timer is armed only when the call's settings allow one more attempt, and cleared when another starts.
    if (!this.policy.admitHedge(attempt, this.parent)) return;
    this.policy.hedged(attempt, this.policy.clock.now() - this.lastStart);
    this.launch();
  };

  /**
   * After `attempt` failed (and settled): hands over to the next attempt at
   * once, or waits for those still running; once none is left, answers the
   * error to end with. A cancellation's own error (see `isCancellation`) is
   * no failure: it neither hands over nor hides an error that reached the method.
   */
  protected failure(attempt: HedgeAttempt, error: unknown): { readonly error: unknown } | undefined {
    const cancellation = isCancellation(error, attempt.scope);
    if (!cancellation && !isRefusal(error)) {
      this.reached = error;
      this.reachedAny = true;
      // A failure hands over to the next attempt at once; a refusal would only be refused again.
      if (this.handOver()) return undefined;
    }
    if (this.pending > 0) return undefined;
    if (cancellation) return { error: this.reachedAny ? this.reached : error };
    // "Never left" is a property of the whole call: a refusal must not hide an attempt that reached the method.
    return { error: isRefusal(error) && this.reachedAny ? withRefusalCause(this.reached, error) : error };
  }

  /** Starts the next attempt now, when one may start; false when none does. */
  private handOver(): boolean {
    const number = this.attempts.length + 1;
    if (!this.mayHedge || !this.policy.admitHedge(number, this.parent)) return false;
    this.clearTimer();
    this.policy.hedged(number, 0);
    this.launch();
    return true;
  }

  /** `attempt` ended: its scope is released and, while no answer was taken, its latency recorded. */
  protected settle(attempt: HedgeAttempt): void {
    if (attempt.settled) return;
    attempt.settled = true;
    this.pending--;
    attempt.scope.dispose();
    if (!this.decided) this.policy.recordLatency(this.policy.clock.now() - attempt.start);
  }

  /**
   * Cancels every running attempt but `winner`: its latency is recorded as
   * censored at `now`, its signal aborted, then it is {@link HedgeRun.dropped}. Answers how many.
   */
  protected cancelLosers(winner: HedgeAttempt, now: number): number {
    let cancelled = 0;
    for (const attempt of this.attempts) {
      if (attempt === winner || attempt.settled) continue;
      cancelled++;
      // Censored at the time it ran: a loser took at least that long, and the window must keep the tail it cut.
      this.policy.recordLatency(now - attempt.start);
      supersede(attempt.scope, supersededReason());
      this.dropped(attempt);
    }
    return cancelled;
  }

  /** A cancelled attempt is let go (on the promise path, its own settling releases it). */
  protected dropped(_attempt: HedgeAttempt): void {}

  protected clearTimer(): void {
    if (this.timer === undefined) return;
    this.policy.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
