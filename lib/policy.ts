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
}

/** Runs a thunk; the `next` that turns {@link Policy.call} into `execute(fn)`. */
export function invokeThunk<R>(fn: () => R | PromiseLike<R>): R | PromiseLike<R> {
  return fn();
}
