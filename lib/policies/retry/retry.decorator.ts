import { addLayer } from '../../decorators/metadata';
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
 */
export function Retry(name: string, overrides?: RetryConfigInput): MethodDecorator {
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'retry', name, overrides, decorator: 'Retry' });
}
