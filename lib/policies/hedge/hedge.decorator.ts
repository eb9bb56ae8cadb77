import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { HedgeConfigInput } from './hedge.config';

/**
 * Hedges the method with the named hedge instance (section `hedging`;
 * created from `configs.default` when not declared, or a private instance
 * of the method when no name is given): after the delay with no answer,
 * another attempt starts beside the first, and the first answer wins.
 * Only a method safe to run twice may hedge: one with `@Idempotent` whose
 * key is required (not `required: false`), or whose hedge instance says
 * `safe: true`; any other fails at bootstrap. With `key`, each key of the
 * method's arguments gets a hedge of its own (its own recent latencies, so
 * its own percentile delay, and its own budget), within the section's `keys` bounds.
 *
 * @example
 * ```ts
 * @Hedge('catalog')          // hedging.instances.catalog: { delay: 'p95', safe: true }
 * async product(id: string) { ... }
 *
 * @Hedge('catalog', { key: (region: string) => region })   // a p95 per region
 * async productIn(region: string, id: string) { ... }
 * ```
 */
export function Hedge(name?: string, options?: HedgeConfigInput & KeyOption): MethodDecorator {
  const { key: keyOf, overrides } = splitKey(options);
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'hedge', name, overrides, key: keyOf, decorator: 'Hedge' });
}
