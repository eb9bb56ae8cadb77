import { ErrorClass } from '../../config/error-matcher';
import { addLayer } from '../../decorators/metadata';
import { FALLBACK_BAD_ERRORS, FALLBACK_BAD_HANDLER } from './fallback.messages';
import type { DecoratedMethod } from '../../decorators/decorated-method';
import type { FallbackError, FallbackErrors, FallbackFunctionMismatch, FallbackHandler } from './fallback.handler';

/**
 * A fallback function: gets the method's original arguments, then the
 * error, with `this` bound to the instance.
 */
// Parameters stay `any` so that a handler typed with the method's own parameters is accepted.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type FallbackFn = (this: any, ...argsThenError: any[]) => unknown;

/** What `@Fallback` records; the explorer turns it into a `FallbackPolicy` entry. */
export interface FallbackLayerOptions {
  readonly errors: readonly ErrorClass[];
  readonly handler: string | FallbackFn;
}

/**
 * Answers instead of the method when it fails with one of `errors` (or a
 * subclass). Several may stand on one method: the handler of the most
 * specific matching class wins; no match rethrows the original error.
 * `handler` is the name of a public method of the same class (checked at
 * bootstrap) or a function; either receives the original arguments, then
 * the error.
 *
 * The compiler checks the handler against the method it stands on: a name
 * must be a method of the class whose parameters take the method's
 * arguments then the error (an instance of one of `errors`), and whose
 * answer fits the method's ({@link FallbackAnswer}); a function is checked
 * the same way, through its annotated parameters.
 *
 * @example
 * ```ts
 * @Fallback(CallNotPermittedError, 'rejectedNotCharged')
 * @Fallback(Error, 'pendingOutcomeUnknown')
 * @Retry('payments')
 * async charge(order: Order): Promise<Outcome> { ... }
 *
 * rejectedNotCharged(order: Order, error: CallNotPermittedError): Outcome { ... }
 * ```
 */
export function Fallback<Errors extends FallbackErrors, Handler extends string>(
  errors: Errors,
  handler: Handler,
): <M extends DecoratedMethod>(
  target: { readonly [Name in Handler]: FallbackHandler<M, FallbackError<Errors>> },
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
/** Answers with a function instead of the method: see the overload taking a method name. */
export function Fallback<Errors extends FallbackErrors, Handler extends FallbackFn>(
  errors: Errors,
  handler: Handler,
): <M extends DecoratedMethod>(
  target: Handler extends FallbackHandler<M, FallbackError<Errors>>
    ? object
    : FallbackFunctionMismatch<FallbackHandler<M, FallbackError<Errors>>>,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
export function Fallback(errors: FallbackErrors, handler: string | FallbackFn): MethodDecorator {
  return (target, key, descriptor) => {
    const where = `${(target as object).constructor?.name ?? 'anonymous'}.${String(key)}`;
    const list: readonly unknown[] = Array.isArray(errors) ? errors : [errors];
    if (list.length === 0 || list.some((e) => typeof e !== 'function'))
      throw new TypeError(FALLBACK_BAD_ERRORS(where, errors));
    if (!(typeof handler === 'function' || (typeof handler === 'string' && handler !== ''))) {
      throw new TypeError(FALLBACK_BAD_HANDLER(where, handler));
    }
    const options: FallbackLayerOptions = { errors: list as readonly ErrorClass[], handler };
    addLayer(target, key, descriptor, { kind: 'fallback', options, decorator: 'Fallback' });
  };
}
