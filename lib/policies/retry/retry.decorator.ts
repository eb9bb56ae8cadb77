import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { RetryConfigInput } from './retry.config';

/**
 * Retries the method with the named retry instance (created from
 * `configs.default` when not declared). `overrides` give this method a
 * private instance with those settings changed.
 *
 * @example
 * ```ts
 * @Retry('inventory')
 * async stockLevel(sku: string) { ... }
 * ```
 *
 * With `key`, each key of the method's arguments gets a retry instance of its own (its own budget).
 */
export function Retry(name: string, options?: RetryConfigInput & KeyOption): MethodDecorator {
  const { key: keyOf, overrides } = splitKey(options);
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'retry', name, overrides, key: keyOf, decorator: 'Retry' });
}
