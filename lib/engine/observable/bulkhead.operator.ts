import { Observable, Observer, Subscriber, Subscription, TeardownLogic, Unsubscribable } from 'rxjs';
import { callerCancellation } from '../../kernel/cancellation';
import { contextStorage, ResilienceContext } from '../../kernel/context';

import { NO_PERMIT } from '../layers';

/** @internal What a bulkhead's Observable operator asks of it: permits, and places in its queue. */
export interface PermitSource {
  tryEnter(): number;
  exit(started: number): void;
  entered(): number;
  queueForPermit(grant: () => void, fail: (error: unknown) => void): object;
  leaveQueue(place: object): void;
  cancelled(error: DOMException): unknown;
}

/** @internal `upstream` with each subscription holding a bulkhead permit; see {@link BulkheadPolicy.observe}. */
export class BoundedObservable<T> extends Observable<T> {
  constructor(
    readonly bulkhead: PermitSource,
    readonly upstream: Observable<T>,
  ) {
    super(subscribeBounded);
  }
}

function subscribeBounded<T>(this: Observable<T>, subscriber: Subscriber<T>): TeardownLogic {
  const self = this as BoundedObservable<T>;
  return new BoundedSubscription(self.bulkhead, self.upstream, subscriber).start();
}

/** One subscription: its permit (or place in the queue), given back exactly once. */
class BoundedSubscription<T> implements Observer<T>, Unsubscribable {
  private permit = NO_PERMIT;
  // Stryker disable next-line BooleanLiteral: end() only runs after hold() set it; every other exit skips it
  private holding = false;
  /** A permit was handed over from the queue; the subscription starts in a microtask. */
  private handedOver = false;
  private ended = false;
  private place?: object;
  private inner?: Subscription;

  constructor(
    private readonly bulkhead: PermitSource,
    private readonly upstream: Observable<T>,
    private readonly downstream: Subscriber<T>,
  ) {}

  start(): Unsubscribable | undefined {
    const scope = contextStorage.getStore();
    // A caller that has cancelled gets no permit: its AbortError, on subscribe.
    const cancelled = callerCancellation(scope);
    if (cancelled !== undefined) {
      this.ended = true;
      this.downstream.error(this.bulkhead.cancelled(cancelled));
      return undefined;
    }
    const permit = this.bulkhead.tryEnter();
    if (permit !== NO_PERMIT) {
      this.hold(permit);
      return this;
    }
    try {
      this.place = this.bulkhead.queueForPermit(
        () => {
          this.place = undefined;
          this.handedOver = true;
          // As a queued promise call resumes after its wait: the call that gave the permit back has its outcome
          // seen by the layers around it (a retry decided, a breaker told) before this one starts.
          queueMicrotask(() => {
            if (this.ended) return;
            this.handedOver = false;
            contextStorage.run(scope as ResilienceContext, () => this.hold(this.bulkhead.entered()));
          });
        },
        (error) => {
          this.place = undefined;
          // Stryker disable next-line BooleanLiteral: no permit or place is left for a later unsubscribe to give back
          this.ended = true;
          this.downstream.error(error);
        },
      );
    } catch (error) {
      // Stryker disable next-line BooleanLiteral: a refusal on subscribe returns no teardown, so nothing reads it
      this.ended = true;
      this.downstream.error(error);
      return undefined;
    }
    return this;
  }

  next(value: T): void {
    // Stryker disable next-line ConditionalExpression: an ended rxjs Subscriber drops values
    if (!this.ended) this.downstream.next(value);
  }

  error(error: unknown): void {
    // Stryker disable next-line ConditionalExpression: end() releases once; an ended downstream ignores this
    if (this.ended) return;
    // The permit is back before the layers around see the outcome, as a promise attempt's is: a retry at once may
    // take it. A waiter it is handed to starts after them.
    this.end();
    this.downstream.error(error);
  }

  complete(): void {
    // Stryker disable next-line ConditionalExpression: end() releases once; an ended downstream ignores this
    if (this.ended) return;
    this.end();
    this.downstream.complete();
  }

  unsubscribe(): void {
    // Stryker disable next-line ConditionalExpression: once ended, no place or permit is left and the source is closed
    if (this.ended) return;
    if (this.place !== undefined) {
      // Stryker disable next-line BooleanLiteral: rxjs tears down once; an unlinked waiter is never served
      this.ended = true;
      this.bulkhead.leaveQueue(this.place);
      return;
    }
    if (this.handedOver) {
      // Left before it started: the permit goes back unused, with no event (none said it was permitted).
      this.ended = true;
      this.bulkhead.exit(Number.NaN);
      return;
    }
    this.end();
    this.inner?.unsubscribe();
  }

  private hold(permit: number): void {
    this.permit = permit;
    this.holding = true;
    const inner = this.upstream.subscribe(this as Observer<T>);
    if (this.ended) inner.unsubscribe();
    else this.inner = inner;
  }

  private end(): void {
    this.ended = true;
    // Stryker disable next-line ConditionalExpression: end() runs once and only after hold(), so this holds
    if (this.holding) {
      // Stryker disable next-line BooleanLiteral: end() runs once (ended), so the flag is not read again
      this.holding = false;
      this.bulkhead.exit(this.permit);
    }
  }
}
