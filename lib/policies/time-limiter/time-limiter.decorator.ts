import { INVALID_VALUE } from '../../config/config.messages';
import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { TimeLimiterConfigInput } from './time-limiter.config';

/**
 * Bounds each call of the method by a time limit and the request deadline.
 * Pass a time limiter instance name, or a number of milliseconds for a
 * private limiter of that duration. With `key`, each key of the method's
 * arguments gets a time limiter of its own.
 *
 * @example
 * ```ts
 * @Timeout('payments')      // timeLimiter.instances.payments
 * @Timeout(250)             // 250 ms, this method only
 * ```
 */
export function Timeout(nameOrMs: string | number, options?: TimeLimiterConfigInput & KeyOption): MethodDecorator {
  const { key: keyOf, overrides } = splitKey(options);
  return (target, key, descriptor) => {
    if (typeof nameOrMs === 'number') {
      if (!Number.isFinite(nameOrMs) || nameOrMs < 0) {
        throw new TypeError(
          INVALID_VALUE(`@Timeout on ${String(key)}`, 'timeoutDuration', 'a non-negative number of ms', nameOrMs),
        );
      }
      addLayer(target, key, descriptor, {
        kind: 'timeLimiter',
        overrides: { ...overrides, timeoutDuration: nameOrMs },
        key: keyOf,
        decorator: 'Timeout',
      });
      return;
    }
    addLayer(target, key, descriptor, {
      kind: 'timeLimiter',
      name: nameOrMs,
      overrides,
      key: keyOf,
      decorator: 'Timeout',
    });
  };
}
