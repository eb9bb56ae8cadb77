import { Observable, Subscription } from 'rxjs';
import { callCancellable, ExecuteOptions, underCallerSignal } from './cancellation';
import { Clock } from './clock';
import { currentSignal } from './context';

/**
 * @internal What every policy exposes to the engine: run `next(arg)` under the
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

/**
 * What `execute` runs: a function of its attempt's `AbortSignal`, aborted
 * when the attempt's time limit passes, when a hedge copy loses, and when
 * the caller cancels. A function that declares no parameter makes no signal.
 */
export type AttemptFunction<R> = (signal: AbortSignal) => R | PromiseLike<R>;

/**
 * @internal Calls `fn` as one attempt: with the attempt's signal when it
 * declares a parameter (a signal that never aborts where nothing can
 * cancel the attempt), raced against the caller's cancellation.
 */
export function invokeAttempt<R>(fn: AttemptFunction<R>): R | PromiseLike<R> {
  return callCancellable<AttemptFunction<R>, R>(invokeWithSignal, fn);
}

/** @internal Calls `fn` with its attempt's signal, made only when `fn` declares a parameter. */
export function invokeWithSignal<R>(fn: AttemptFunction<R>): R | PromiseLike<R> {
  if (fn.length === 0) return (fn as () => R | PromiseLike<R>)();
  return fn(currentSignal() ?? new AbortController().signal);
}

/**
 * @internal `execute(fn, options)` of a single policy: `fn` run by
 * `policy.call` as {@link invokeAttempt} does, in a scope that follows
 * `options.signal` when one is given. A caller that has already cancelled
 * gets its `AbortError` and nothing runs.
 */
export function executeUnder<R>(
  policy: Policy,
  clock: Clock,
  fn: AttemptFunction<R>,
  options: ExecuteOptions | undefined,
): Promise<R> {
  const signal = options?.signal;
  if (signal === undefined) return policy.call<AttemptFunction<R>, R>(invokeAttempt, fn);
  return underCallerSignal(clock, signal, (given: AttemptFunction<R>) => policy.call(invokeAttempt, given), fn);
}

/**
 * @internal `source` with each subscription run as one `call` that lasts
 * until the subscription ends (an unsubscribe ends it as a success): how a
 * layer without an Observable operator of its own applies to Observables.
 * A value the call answers without subscribing (a replay) is emitted.
 */
export function observeAsCalls<T>(call: Policy['call'], source: Observable<T>): Observable<T> {
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
    call(run, undefined).then(
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
