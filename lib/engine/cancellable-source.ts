import { Observable, Subscriber, Subscription, TeardownLogic } from 'rxjs';
import { callerCancellation } from '../kernel/cancellation';
import { contextStorage } from '../kernel/context';

/**
 * `source` with each subscription raced against its caller's cancellation:
 * the Observable counterpart of the promise composition's `callCancellable`,
 * and the innermost step of every Observable composition. A subscription
 * whose caller has already cancelled subscribes nothing and errors with the
 * caller's `AbortError`; one whose caller cancels while it runs is
 * unsubscribed from `source` and errors with it at once, so a later value
 * is discarded. The policies around it take that error as no outcome, as
 * they take it from a promise attempt.
 */
export function cancellableSource<T>(source: Observable<T>): Observable<T> {
  return new CancellableObservable(source);
}

class CancellableObservable<T> extends Observable<T> {
  constructor(readonly upstream: Observable<T>) {
    super(subscribeCancellable);
  }
}

function subscribeCancellable<T>(this: Observable<T>, subscriber: Subscriber<T>): TeardownLogic {
  const upstream = (this as CancellableObservable<T>).upstream;
  const scope = contextStorage.getStore();
  // Nothing can cancel a subscription made outside every caller's scope.
  if (scope?.caller === undefined) return upstream.subscribe(subscriber);
  const cancelled = callerCancellation(scope);
  if (cancelled !== undefined) {
    subscriber.error(cancelled);
    return undefined;
  }
  // Made first, so a cancellation while subscribing finds it.
  const inner = new Subscription();
  // It listens to the nearest scope (an attempt's follows its caller's), so it lets go when the attempt ends by its
  // own time limit or a hedge's win, leaving the outcome to the policy that ended it.
  const onAbort = (): void => {
    const abort = callerCancellation(scope);
    if (abort === undefined) return;
    inner.unsubscribe();
    subscriber.error(abort);
  };
  scope.watch(onAbort);
  subscriber.add(() => scope.unwatch(onAbort));
  // An observer of its own: unsubscribing `upstream` must leave `subscriber` open for the AbortError.
  inner.add(
    upstream.subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => subscriber.error(error),
      complete: () => subscriber.complete(),
    }),
  );
  return inner;
}
