import { Observable, Observer, Subscriber, Subscription, TeardownLogic, Unsubscribable } from 'rxjs';
import { contextStorage, ResilienceContext } from '../context';

import { NO_PERMIT, PermitSource } from './bulkhead.permits';

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
  private holding = false;
  private ended = false;
  private place?: object;
  private inner?: Subscription;

  constructor(
    private readonly bulkhead: PermitSource,
    private readonly upstream: Observable<T>,
    private readonly downstream: Subscriber<T>,
  ) {}

  start(): Unsubscribable | undefined {
    const permit = this.bulkhead.tryEnter();
    if (permit !== NO_PERMIT) {
      this.hold(permit);
      return this;
    }
    const scope = contextStorage.getStore();
    try {
      this.place = this.bulkhead.queueForPermit(
        () => {
          this.place = undefined;
          contextStorage.run(scope as ResilienceContext, () => this.hold(this.bulkhead.entered()));
        },
        (error) => {
          this.place = undefined;
          this.ended = true;
          this.downstream.error(error);
        },
      );
    } catch (error) {
      this.ended = true;
      this.downstream.error(error);
      return undefined;
    }
    return this;
  }

  next(value: T): void {
    if (!this.ended) this.downstream.next(value);
  }

  error(error: unknown): void {
    if (this.ended) return;
    this.end();
    this.downstream.error(error);
  }

  complete(): void {
    if (this.ended) return;
    this.end();
    this.downstream.complete();
  }

  unsubscribe(): void {
    if (this.ended) return;
    if (this.place !== undefined) {
      this.ended = true;
      this.bulkhead.leaveQueue(this.place);
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
    if (this.holding) {
      this.holding = false;
      this.bulkhead.exit(this.permit);
    }
  }
}
