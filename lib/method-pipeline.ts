import { from, isObservable, Observable, of, throwError } from 'rxjs';
import { contextStorage, currentContext, policyScope } from './context';

/**
 * What a decorated method returns, as far as is known before calling it:
 * from its declared return type (`design:returntype`), or from being an
 * `async` function; `unknown` when neither tells.
 */
export type ReturnKind = 'promise' | 'observable' | 'unknown';

/** The composed pipeline stored on an instance: takes the call's argument array. */
export type Pipeline = (args: unknown[]) => unknown;

/** Runs the subscriptions of a method's Observable through its layers. */
export type ObservablePipeline = (source: Observable<unknown>, args: unknown[]) => Observable<unknown>;

const PLAIN_TYPES = new Map<unknown, string>([
  [Number, 'Number'],
  [String, 'String'],
  [Boolean, 'Boolean'],
]);

/** The name of a declared return type that is a plain value (Number, String, Boolean), else `undefined`. */
export function plainReturnType(declared: unknown): string | undefined {
  return PLAIN_TYPES.get(declared);
}

/** What a method returns, from its declared return type or its function kind. */
export function returnKindOf(declared: unknown, method: (...args: unknown[]) => unknown): ReturnKind {
  if (typeof declared === 'function') {
    if (declared === Promise || declared.prototype instanceof Promise) return 'promise';
    if (isObservable(declared.prototype)) return 'observable';
  }
  return method.constructor?.name === 'AsyncFunction' ? 'promise' : 'unknown';
}

/**
 * The pipeline a method's trampoline runs: the promise pipeline for a
 * method known to return a Promise; for one known to return an Observable,
 * the method is called (which starts nothing) and its Observable goes
 * through `observe` (Observable in, Observable out). A method of unknown
 * kind is called inside the promise pipeline's attempts, so each call,
 * the first included, runs inside the layers.
 *
 * @param kind - what the method is known to return
 * @param call - calls the method itself with its argument array
 * @param promise - builds the promise pipeline over the given way to call the method
 * @param observe - runs an Observable's subscriptions through the layers
 */
export function methodPipeline(
  kind: ReturnKind,
  call: Pipeline,
  promise: (invoke: Pipeline) => Pipeline,
  observe: ObservablePipeline,
): Pipeline {
  if (kind === 'promise') return promise(call);
  if (kind === 'observable') return observedPipeline(call, observe);
  return new UndeclaredKindPipeline(call, promise, observe).run;
}

/** Calls the method and runs the Observable it returns through `observe`; anything else becomes one. */
function observedPipeline(call: Pipeline, observe: ObservablePipeline): Pipeline {
  return (args) => {
    let result: unknown;
    try {
      result = call(args);
    } catch (error) {
      return observe(
        throwError(() => error),
        args,
      );
    }
    return observe(isObservable(result) ? result : isThenable(result) ? from(result) : of(result), args);
  };
}

/**
 * A method whose declaration does not tell what it returns. Until a call
 * shows an Observable, each call runs the promise pipeline at once (a
 * Promise method's work starts when it is called, so the call must be
 * inside the first attempt) and answers an {@link EitherAnswer}. An
 * Observable an attempt gets is subscribed inside that attempt, its last
 * value the attempt's answer; later calls take the Observable path, lazy
 * and value by value. A call that answered anything else marks the method a
 * promise method: later calls run as a declared one's, answering plain Promises.
 */
class UndeclaredKindPipeline {
  private kind: 'promise' | 'observable' | undefined;
  private readonly probing: Pipeline;
  private readonly promise: Pipeline;
  private readonly observed: Pipeline;

  constructor(
    private readonly call: Pipeline,
    promise: (invoke: Pipeline) => Pipeline,
    observe: ObservablePipeline,
  ) {
    this.probing = promise(this.attempt);
    this.promise = promise(call);
    this.observed = observedPipeline(call, observe);
  }

  readonly run: Pipeline = (args) => {
    if (this.kind === 'promise') return this.promise(args);
    if (this.kind === 'observable') return this.observed(args);
    return new EitherAnswer(this.probing(args) as Promise<unknown>);
  };

  private readonly attempt: Pipeline = (args) => {
    const result = this.call(args);
    if (!isObservable(result)) {
      this.kind ??= 'promise';
      return result;
    }
    this.kind = 'observable';
    return lastValueInAttempt(result);
  };
}

/**
 * The answer of a call made before its method's kind is known: a Promise
 * of the call's answer that is also an Observable of it, so that the
 * caller may await it or subscribe to it, whichever the method is.
 */
class EitherAnswer extends Observable<unknown> implements PromiseLike<unknown> {
  constructor(private readonly answer: Promise<unknown>) {
    super((subscriber) => {
      answer.then(
        (value) => {
          subscriber.next(value);
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(error),
      );
    });
  }

  then<A = unknown, B = never>(
    onFulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.answer.then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<unknown> {
    return this.answer.catch(onRejected);
  }

  finally(onFinally?: (() => void) | null): Promise<unknown> {
    return this.answer.finally(onFinally);
  }
}

/**
 * Subscribes `source` inside the running attempt and answers its last
 * value (`undefined` when it completes with none); the subscription ends
 * when the attempt's signal aborts (its time limit, a hedge that lost).
 */
function lastValueInAttempt(source: Observable<unknown>): Promise<unknown> {
  const scope = policyScope();
  return new Promise((resolve, reject) => {
    let last: unknown;
    const signal = scope?.signal;
    const onAbort = (): void => subscription.unsubscribe();
    const done = (): void => signal?.removeEventListener('abort', onAbort);
    const observer = {
      next: (value: unknown) => (last = value),
      error: (error: unknown) => {
        done();
        reject(error);
      },
      complete: () => {
        done();
        resolve(last);
      },
    };
    const subscription =
      scope === undefined || currentContext() === scope
        ? source.subscribe(observer)
        : contextStorage.run(scope, () => source.subscribe(observer));
    if (subscription.closed || signal === undefined) return;
    if (signal.aborted) subscription.unsubscribe();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
