import { ErrorClass } from '../../config/error-matcher';
import { addLayer } from '../../decorators/metadata';
import { FALLBACK_BAD_ERRORS, FALLBACK_BAD_HANDLER } from './fallback.messages';

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
 * `handler` is a method name on the same instance (checked at bootstrap)
 * or a function; either receives the original arguments, then the error.
 *
 * @example
 * ```ts
 * @Fallback(CallNotPermittedError, 'rejectedNotCharged')
 * @Fallback(Error, 'pendingOutcomeUnknown')
 * @Retry('payments')
 * async charge(order: Order) { ... }
 * ```
 */
export function Fallback(errors: ErrorClass | readonly ErrorClass[], handler: string | FallbackFn): MethodDecorator {
  return (target, key, descriptor) => {
    const where = `${(target as object).constructor?.name ?? 'anonymous'}.${String(key)}`;
    const list = Array.isArray(errors) ? errors : [errors];
    if (list.length === 0 || list.some((e) => typeof e !== 'function'))
      throw new TypeError(FALLBACK_BAD_ERRORS(where, errors));
    if (!(typeof handler === 'function' || (typeof handler === 'string' && handler !== ''))) {
      throw new TypeError(FALLBACK_BAD_HANDLER(where, handler));
    }
    const options: FallbackLayerOptions = { errors: list, handler };
    addLayer(target, key, descriptor, { kind: 'fallback', options, decorator: 'Fallback' });
  };
}
