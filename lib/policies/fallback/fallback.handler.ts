import type { Observable } from 'rxjs';
import type { ErrorClass } from '../../config/error-matcher';
import type { DecoratedMethod } from '../../decorators/decorated-method';

/** The error classes a `@Fallback` answers for: one class, or a non-empty list of them. */
export type FallbackErrors = ErrorClass<Error> | readonly ErrorClass<Error>[];

/**
 * The error a handler of `Errors` receives: an instance of one of the
 * listed classes (or of a subclass), since no other error reaches it.
 */
export type FallbackError<Errors extends FallbackErrors> = InstanceType<
  Errors extends readonly (infer C extends ErrorClass<Error>)[] ? C : Exclude<Errors, readonly unknown[]>
>;

/**
 * What a handler may answer for a method that returns `R`: for an
 * Observable method, a value, a Promise or an Observable of its element
 * type; for any other (a Promise method), the value or a Promise of it.
 */
export type FallbackAnswer<R> =
  R extends Observable<infer T> ? T | PromiseLike<T> | Observable<T> : Awaited<R> | PromiseLike<Awaited<R>>;

/**
 * The type a handler must have to stand in for the method `M` on errors
 * `E`: it is called with the method's arguments, then the error, and
 * answers as {@link FallbackAnswer} allows. A handler may take fewer
 * parameters (ignore the error, or everything).
 */
export type FallbackHandler<M extends DecoratedMethod, E> = (
  ...argsThenError: [...Parameters<M>, E]
) => FallbackAnswer<ReturnType<M>>;

/**
 * What `tsc` names when a fallback function does not fit the method it
 * stands on: `Expected` is the handler type the method needs.
 */
export interface FallbackFunctionMismatch<Expected> {
  /** The type the function should have had. */
  readonly 'fallback function must be assignable to': Expected;
}
