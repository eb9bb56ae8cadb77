import { from, isObservable, Observable, of, throwError } from 'rxjs';

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
 * method known to return a Promise; otherwise the method is called first
 * and an Observable it returns goes through `observe` (Observable in,
 * Observable out), anything else through the promise pipeline.
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
  return new CallFirstPipeline(kind, call, promise, observe).run;
}

/**
 * Calls the method before its layers, to see what it returns. Once a call
 * returned something other than an Observable, a method of unknown kind is
 * taken for a promise method: later calls run inside the layers, as for one.
 */
class CallFirstPipeline {
  private primedArgs: unknown[] | undefined;
  private primed: unknown;
  private readonly promise: Pipeline;

  constructor(
    private kind: ReturnKind,
    private readonly call: Pipeline,
    promise: (invoke: Pipeline) => Pipeline,
    private readonly observe: ObservablePipeline,
  ) {
    this.promise = promise(this.invoke);
  }

  readonly run: Pipeline = (args) => {
    if (this.kind === 'promise') return this.promise(args);
    let result: unknown;
    try {
      result = this.call(args);
    } catch (error) {
      if (this.kind === 'observable')
        return this.observe(
          throwError(() => error),
          args,
        );
      return this.promise(this.prime(args, Promise.reject(error)));
    }
    if (isObservable(result)) {
      this.kind = 'observable';
      return this.observe(result, args);
    }
    if (this.kind === 'observable') return this.observe(isThenable(result) ? from(result) : of(result), args);
    this.kind = 'promise';
    return this.promise(this.prime(args, result));
  };

  /** The first attempt of the call with `args` answers `result` instead of calling the method again. */
  private prime(args: unknown[], result: unknown): unknown[] {
    // A call refused before its first attempt never reads it: do not let its rejection go unhandled.
    if (isThenable(result)) result.then(undefined, () => undefined);
    this.primedArgs = args;
    this.primed = result;
    return args;
  }

  private readonly invoke: Pipeline = (args) => {
    if (args !== this.primedArgs) return this.call(args);
    const result = this.primed;
    this.primedArgs = undefined;
    this.primed = undefined;
    return result;
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
