import { from, isObservable, lastValueFrom, Observable, of, throwError } from 'rxjs';
import { Pipeline, ReturnKind } from '../decorators/return-kind';
import { withoutOutcomeError } from '../kernel/cancellation';
import { isThenable } from '../kernel/thenable';

/** Runs the subscriptions of a method's Observable through its layers. */
export type ObservablePipeline = (source: Observable<unknown>, args: unknown[]) => Observable<unknown>;

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
 * attempt that gets an Observable ends with no outcome (an
 * {@link ObservableReturned}, marked by `withoutOutcomeError`); the call's
 * answer then runs that Observable through `observe` per subscription, as
 * every later call's does. A call that
 * answered anything else marks the method a promise method: later calls
 * run as a declared one's, answering plain Promises.
 */
class UndeclaredKindPipeline {
  private kind: 'promise' | 'observable' | undefined;
  private readonly probing: Pipeline;
  private readonly promise: Pipeline;
  private readonly observed: Pipeline;

  constructor(
    private readonly call: Pipeline,
    promise: (invoke: Pipeline) => Pipeline,
    private readonly observe: ObservablePipeline,
  ) {
    this.probing = promise(this.attempt);
    this.promise = promise(call);
    this.observed = observedPipeline(call, observe);
  }

  readonly run: Pipeline = (args) => {
    if (this.kind === 'promise') return this.promise(args);
    if (this.kind === 'observable') return this.observed(args);
    return new EitherAnswer(this.probing(args) as Promise<unknown>, args, this.observe);
  };

  private readonly attempt: Pipeline = (args) => {
    const result = this.call(args);
    if (!isObservable(result)) {
      this.kind ??= 'promise';
      return result;
    }
    this.kind = 'observable';
    return Promise.reject(withoutOutcomeError(new ObservableReturned(result)));
  };
}

/**
 * How the attempt of a call made before its method's kind is known ends
 * when the method returned an Observable: with no outcome, since calling a
 * cold Observable's method starts nothing. It carries the Observable to
 * the call's {@link EitherAnswer}.
 */
class ObservableReturned extends Error {
  constructor(readonly source: Observable<unknown>) {
    super('the method returned an Observable, which runs when it is subscribed');
    this.name = 'ObservableReturned';
  }
}

/**
 * The answer of a call made before its method's kind is known: an
 * Observable and a Promise of the call's answer, so that the caller may
 * subscribe to it or await it, whichever the method is. When the method
 * returned an Observable, each subscription runs it through `observe` (as
 * a later call's answer does), and awaiting gives the last value of one
 * such subscription; else both give the promise pipeline's answer. Either
 * way the answer waits for the call's attempt to be over, so nothing it
 * held is held twice.
 */
class EitherAnswer extends Observable<unknown> implements PromiseLike<unknown> {
  private readonly outcome: Promise<unknown>;
  private awaited: Promise<unknown> | undefined;

  constructor(
    answer: Promise<unknown>,
    private readonly args: unknown[],
    private readonly observe: ObservablePipeline,
  ) {
    super((subscriber) => {
      this.outcome.then(
        (outcome) => {
          if (subscriber.closed) return;
          if (outcome instanceof ObservableReturned) this.observe(outcome.source, this.args).subscribe(subscriber);
          else {
            subscriber.next(outcome);
            subscriber.complete();
          }
        },
        (error: unknown) => subscriber.error(error),
      );
    });
    this.outcome = answer.catch(returnedObservable);
  }

  then<A = unknown, B = never>(
    onFulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.answer().then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<unknown> {
    return this.answer().catch(onRejected);
  }

  finally(onFinally?: (() => void) | null): Promise<unknown> {
    return this.answer().finally(onFinally);
  }

  /** The awaited answer: the promise pipeline's, or the last value of one subscription, made on first use. */
  private answer(): Promise<unknown> {
    return (this.awaited ??= this.outcome.then((outcome) =>
      outcome instanceof ObservableReturned
        ? lastValueFrom(this.observe(outcome.source, this.args), { defaultValue: undefined })
        : outcome,
    ));
  }
}

/** The {@link ObservableReturned} an attempt ended with, as a value; any other error rethrown. */
function returnedObservable(error: unknown): ObservableReturned {
  if (error instanceof ObservableReturned) return error;
  throw error;
}
