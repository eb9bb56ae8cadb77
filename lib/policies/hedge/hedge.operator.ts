import { Observable, Subscriber } from 'rxjs';
import { callerAbortError } from '../../kernel/cancellation';
import { contextStorage } from '../../kernel/context';
import { HedgeAttempt, HedgeDecisions, HedgeRun } from './hedge-run';

/** @internal `upstream` with each subscription hedged; see {@link HedgePolicy.observe}. */
export class HedgedObservable<T> extends Observable<T> {
  constructor(policy: HedgeDecisions, upstream: Observable<T>) {
    super((subscriber) => new HedgedSubscription(policy, upstream, subscriber).start());
  }
}

/**
 * One subscription of a hedged Observable: the first attempt to emit (or
 * complete) is kept and forwarded; the others are unsubscribed and their
 * signals aborted. Errors before that hand over as for a call. A caller
 * that has cancelled subscribes nothing; one that cancels while the
 * subscription runs ends it at once, every attempt unsubscribed.
 */
class HedgedSubscription<T> extends HedgeRun {
  private kept: HedgeAttempt | undefined;

  constructor(
    policy: HedgeDecisions,
    private readonly upstream: Observable<T>,
    private readonly subscriber: Subscriber<T>,
  ) {
    super(policy, contextStorage.getStore(), undefined);
  }

  protected get decided(): boolean {
    return this.kept !== undefined;
  }

  start(): (() => void) | undefined {
    const parent = this.parent;
    if (parent !== undefined) {
      if (parent.aborted) {
        this.subscriber.error(callerAbortError(parent.reason));
        return undefined;
      }
      this.followParent(parent);
    }
    this.launch();
    return () => {
      this.closed = true;
      this.clearTimer();
      this.stopFollowing();
      for (const attempt of this.attempts) attempt.subscription?.unsubscribe();
    };
  }

  protected cancelled(error: unknown): void {
    for (const attempt of this.attempts) if (!attempt.settled) this.dropped(attempt);
    // Once an attempt was kept, its values were the call's: it ends with the caller's cancellation, not an earlier failure.
    this.subscriber.error(this.kept === undefined ? error : callerAbortError(this.parent?.reason));
  }

  protected launch(): void {
    const attempt = this.newAttempt();
    const subscription = contextStorage.run(attempt.scope, () =>
      this.upstream.subscribe({
        next: (value) => this.onNext(attempt, value),
        error: (error: unknown) => this.onError(attempt, error),
        complete: () => this.onComplete(attempt),
      }),
    );
    // An attempt that lost (or whose caller cancelled) while it was still subscribing is dropped now.
    if (this.closed || (this.kept !== undefined && this.kept !== attempt)) subscription.unsubscribe();
    else attempt.subscription = subscription;
  }

  private onNext(attempt: HedgeAttempt, value: T): void {
    if (attempt.settled) return;
    if (this.kept === undefined) this.keep(attempt);
    if (this.kept === attempt) this.subscriber.next(value);
  }

  private onComplete(attempt: HedgeAttempt): void {
    if (attempt.settled) return;
    if (this.kept === undefined) this.keep(attempt);
    if (this.kept !== attempt) return;
    this.settle(attempt);
    this.stopFollowing();
    this.subscriber.complete();
  }

  private onError(attempt: HedgeAttempt, error: unknown): void {
    if (attempt.settled) return;
    if (this.kept === attempt) {
      this.settle(attempt);
      this.stopFollowing();
      this.subscriber.error(error);
      return;
    }
    if (this.kept !== undefined) return;
    this.settle(attempt);
    const end = this.failure(attempt, error);
    if (end === undefined) return;
    this.clearTimer();
    this.stopFollowing();
    this.policy.answered(attempt.number, 0, this.attempts.length, false);
    this.subscriber.error(end.error);
  }

  /** Keeps `winner`: the timer stops and every other running attempt is unsubscribed and its signal aborted. */
  private keep(winner: HedgeAttempt): void {
    this.kept = winner;
    this.clearTimer();
    const now = this.policy.clock.now();
    this.policy.recordLatency(now - winner.start);
    const cancelled = this.cancelLosers(winner, now);
    this.policy.answered(winner.number, cancelled, this.attempts.length, true);
  }

  /** A cancelled attempt is unsubscribed and its scope released at once. */
  protected override dropped(attempt: HedgeAttempt): void {
    attempt.settled = true;
    this.pending--;
    attempt.subscription?.unsubscribe();
    attempt.scope.dispose();
  }
}
