import { Observable, Observer, Subscriber, Subscription, TeardownLogic, Unsubscribable } from 'rxjs';
import type { Clock } from '../../kernel/clock';

/** @internal What a guarded subscription asks of its breaker (the policy, without a cycle back to it). */
export interface GuardingBreaker {
  readonly clock: Clock;
  readonly callEpoch: number;
  tryAcquirePermission(): boolean;
  notPermittedError(): Error;
  recordCall(epoch: number, start: number, failed: boolean, outcome: unknown, end?: number): void;
  releasePermission(): void;
}

/** @internal `upstream` with each subscription as one call of a breaker; see {@link CircuitBreakerPolicy.observe}. */
export class GuardedObservable<T> extends Observable<T> {
  constructor(
    readonly breaker: GuardingBreaker,
    readonly upstream: Observable<T>,
  ) {
    super(subscribeGuarded);
  }
}

function subscribeGuarded<T>(this: Observable<T>, subscriber: Subscriber<T>): TeardownLogic {
  const self = this as GuardedObservable<T>;
  const breaker = self.breaker;
  if (!breaker.tryAcquirePermission()) {
    subscriber.error(breaker.notPermittedError());
    return undefined;
  }
  return new GuardedSubscription(breaker, subscriber).start(self.upstream);
}

/** One permitted call: recorded once, when the subscription ends, timed to its first value (docs/decisions/0006-observable-methods.md). */
class GuardedSubscription<T> implements Observer<T>, Unsubscribable {
  private readonly epoch: number;
  private readonly startedAt: number;
  private firstValueAt: number | undefined;
  private last: T | undefined;
  private ended = false;
  private inner?: Subscription;

  constructor(
    private readonly breaker: GuardingBreaker,
    private readonly downstream: Subscriber<T>,
  ) {
    this.epoch = breaker.callEpoch;
    this.startedAt = breaker.clock.now();
  }

  start(upstream: Observable<T>): Unsubscribable {
    // An upstream that ends during subscribe has already closed this subscription; unsubscribe() then does nothing.
    this.inner = upstream.subscribe(this as Observer<T>);
    return this;
  }

  // The `ended` guards below stand for rxjs's own contract (no event after an end, one teardown per subscription);
  // they keep a call from being recorded twice should a source break it.

  next(value: T): void {
    // Stryker disable next-line ConditionalExpression: rxjs delivers no value after the subscription ended
    if (this.ended) return;
    if (this.firstValueAt === undefined) this.firstValueAt = this.breaker.clock.now();
    this.last = value;
    this.downstream.next(value);
  }

  error(error: unknown): void {
    // Stryker disable next-line ConditionalExpression: rxjs delivers no error after the subscription ended
    if (this.ended) return;
    this.ended = true;
    this.breaker.recordCall(this.epoch, this.startedAt, true, error, this.firstValueAt);
    this.downstream.error(error);
  }

  complete(): void {
    // Stryker disable next-line ConditionalExpression: rxjs delivers no completion after the subscription ended
    if (this.ended) return;
    this.ended = true;
    this.breaker.recordCall(this.epoch, this.startedAt, false, this.last, this.firstValueAt);
    this.downstream.complete();
  }

  unsubscribe(): void {
    if (this.ended) return;
    // Stryker disable next-line BooleanLiteral: rxjs runs a teardown once, and the upstream is unsubscribed next
    this.ended = true;
    this.inner?.unsubscribe();
    if (this.firstValueAt !== undefined)
      this.breaker.recordCall(this.epoch, this.startedAt, false, this.last, this.firstValueAt);
    else this.breaker.releasePermission();
  }
}
