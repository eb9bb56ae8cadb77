import { Observable, Subscriber, Subscription } from 'rxjs';
import { Clock, TimerHandle } from '../clock';
import { contextStorage, DEFAULT_DEADLINE_HEADER, ResilienceContext } from '../context';
import { isRefusal, withRefusalCause } from '../refusal';
import { supersede } from '../superseded';

/** @internal What a hedged subscription asks of its hedge policy (the policy, without a cycle back to it). */
export interface HedgeDecisions {
  readonly clock: Clock;
  readonly config: { readonly maxHedgedAttempts: number };
  readonly currentDelay: number;
  recordLatency(ms: number): void;
  admitHedge(attempt: number, parent: ResilienceContext | undefined): boolean;
  hedged(attempt: number, waitedMs: number): void;
  answered(attempt: number, cancelled: number, started: number, success: boolean): void;
}

/** The reason a losing attempt's signal is aborted with. */
export function supersededReason(): DOMException {
  return new DOMException('another hedged attempt answered first', 'AbortError');
}

/** @internal `upstream` with each subscription hedged; see {@link HedgePolicy.observe}. */
export class HedgedObservable<T> extends Observable<T> {
  constructor(policy: HedgeDecisions, upstream: Observable<T>) {
    super((subscriber) => new HedgedSubscription(policy, upstream, subscriber).start());
  }
}

interface SubscribedAttempt {
  readonly number: number;
  readonly scope: ResilienceContext;
  readonly start: number;
  subscription?: Subscription;
  settled: boolean;
}

/**
 * One subscription of a hedged Observable: the first attempt to emit (or
 * complete) is kept and forwarded; the others are unsubscribed and their
 * signals aborted. Errors before that hand over as for a call.
 */
class HedgedSubscription<T> {
  private readonly attempts: SubscribedAttempt[] = [];
  private kept: SubscribedAttempt | undefined;
  private pending = 0;
  // undefined while no hedge is due (TimerHandle admits it).
  private timer: TimerHandle;
  private lastStart = 0;
  private reached: unknown;
  private reachedAny = false;
  private closed = false;
  private readonly parent = contextStorage.getStore();

  constructor(
    private readonly policy: HedgeDecisions,
    private readonly upstream: Observable<T>,
    private readonly subscriber: Subscriber<T>,
  ) {}

  start(): () => void {
    this.launch();
    return () => {
      this.closed = true;
      this.clearTimer();
      for (const attempt of this.attempts) attempt.subscription?.unsubscribe();
    };
  }

  private launch(): void {
    const policy = this.policy;
    const now = policy.clock.now();
    const scope = new ResilienceContext(
      policy.clock,
      this.parent?.deadline ?? Number.POSITIVE_INFINITY,
      this.parent?.header ?? DEFAULT_DEADLINE_HEADER,
      this.parent,
      false,
    );
    const attempt: SubscribedAttempt = { number: this.attempts.length + 1, scope, start: now, settled: false };
    this.attempts.push(attempt);
    this.pending++;
    this.lastStart = now;
    this.armTimer();
    const subscription = contextStorage.run(scope, () =>
      this.upstream.subscribe({
        next: (value) => this.onNext(attempt, value),
        error: (error: unknown) => this.onError(attempt, error),
        complete: () => this.onComplete(attempt),
      }),
    );
    // An attempt that lost while it was still subscribing is dropped now.
    if (this.kept !== undefined && this.kept !== attempt) subscription.unsubscribe();
    else attempt.subscription = subscription;
  }

  private armTimer(): void {
    if (this.attempts.length > this.policy.config.maxHedgedAttempts) return;
    const delay = this.policy.currentDelay;
    if (delay === Number.POSITIVE_INFINITY) return;
    if (this.parent !== undefined && delay >= this.parent.remaining()) return;
    this.timer = this.policy.clock.setTimeout(this.onDelay, delay);
  }

  private readonly onDelay = (): void => {
    this.timer = undefined;
    if (this.kept !== undefined || this.closed) return;
    const attempt = this.attempts.length + 1;
    if (!this.policy.admitHedge(attempt, this.parent)) return;
    this.policy.hedged(attempt, this.policy.clock.now() - this.lastStart);
    this.launch();
  };

  private onNext(attempt: SubscribedAttempt, value: T): void {
    if (this.kept === undefined) this.keep(attempt);
    if (this.kept === attempt) this.subscriber.next(value);
  }

  private onComplete(attempt: SubscribedAttempt): void {
    if (this.kept === undefined) this.keep(attempt);
    if (this.kept !== attempt) return;
    this.settle(attempt);
    this.subscriber.complete();
  }

  private onError(attempt: SubscribedAttempt, error: unknown): void {
    if (this.kept === attempt) {
      this.settle(attempt);
      this.subscriber.error(error);
      return;
    }
    if (this.kept !== undefined) return;
    this.settle(attempt);
    if (!isRefusal(error)) {
      this.reached = error;
      this.reachedAny = true;
      if (this.handOver()) return;
    }
    if (this.pending > 0) return;
    this.clearTimer();
    this.policy.answered(attempt.number, 0, this.attempts.length, false);
    this.subscriber.error(isRefusal(error) && this.reachedAny ? withRefusalCause(this.reached, error) : error);
  }

  private handOver(): boolean {
    const number = this.attempts.length + 1;
    if (!this.policy.admitHedge(number, this.parent)) return false;
    this.clearTimer();
    this.policy.hedged(number, 0);
    this.launch();
    return true;
  }

  /** Keeps `winner`: the timer stops and every other running attempt is unsubscribed and its signal aborted. */
  private keep(winner: SubscribedAttempt): void {
    this.kept = winner;
    this.clearTimer();
    const now = this.policy.clock.now();
    this.policy.recordLatency(now - winner.start);
    let cancelled = 0;
    for (const attempt of this.attempts) {
      if (attempt === winner || attempt.settled) continue;
      cancelled++;
      attempt.settled = true;
      this.pending--;
      this.policy.recordLatency(now - attempt.start);
      supersede(attempt.scope, supersededReason());
      attempt.subscription?.unsubscribe();
      attempt.scope.dispose();
    }
    this.policy.answered(winner.number, cancelled, this.attempts.length, true);
  }

  private settle(attempt: SubscribedAttempt): void {
    if (attempt.settled) return;
    attempt.settled = true;
    this.pending--;
    attempt.scope.dispose();
    if (this.kept === undefined) this.policy.recordLatency(this.policy.clock.now() - attempt.start);
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    this.policy.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
