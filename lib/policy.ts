import { Observable, Subscription } from 'rxjs';

/**
 * What every policy exposes to the pipeline: run `next(arg)` under the
 * policy. Passing `next` and its argument separately lets a composed
 * pipeline run without allocating a closure per call.
 */
export interface Policy {
  /** The instance name. */
  readonly name: string;
  /** Runs `next(arg)` under this policy. */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R>;
  /**
   * Runs each subscription of `source` under this policy; `args` are the
   * decorated method's arguments. A policy without it is applied through
   * `call`, one call per subscription.
   */
  observe?<T>(source: Observable<T>, args: unknown[]): Observable<T>;
}

/** Runs a thunk; the `next` that turns {@link Policy.call} into `execute(fn)`. */
export function invokeThunk<R>(fn: () => R | PromiseLike<R>): R | PromiseLike<R> {
  return fn();
}

/**
 * @internal `source` with each subscription under `policy`: its own
 * `observe` when it has one, else one `call` per subscription that lasts
 * until the subscription ends (an unsubscribe ends it as a success).
 * A value the policy answers without subscribing (a replay) is emitted.
 */
export function observeUnder<T>(policy: Policy, source: Observable<T>, args: unknown[]): Observable<T> {
  if (policy.observe !== undefined) return policy.observe(source, args);
  return new Observable<T>((subscriber) => {
    let inner: Subscription | undefined;
    let subscribed = false;
    let finish: (() => void) | undefined;
    const run = (): Promise<undefined> =>
      new Promise<undefined>((resolve, reject) => {
        subscribed = true;
        finish = () => resolve(undefined);
        inner = source.subscribe({ next: (value) => subscriber.next(value), error: reject, complete: finish });
      });
    policy.call(run, undefined).then(
      (answer) => {
        if (!subscribed) subscriber.next(answer as T);
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      inner?.unsubscribe();
      finish?.();
    };
  });
}
