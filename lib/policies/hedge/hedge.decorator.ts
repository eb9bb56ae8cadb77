import { addLayer } from '../../decorators/metadata';
import { HedgeConfigInput } from './hedge.config';

/**
 * Hedges the method with the named hedge instance (section `hedging`;
 * created from `configs.default` when not declared, or a private instance
 * of the method when no name is given): after the delay with no answer,
 * another attempt starts beside the first, and the first answer wins.
 * Only a method safe to run twice may hedge: one with `@Idempotent` whose
 * key is required (not `required: false`), or whose hedge instance says
 * `safe: true`; any other fails at bootstrap.
 *
 * @example
 * ```ts
 * @Hedge('catalog')          // hedging.instances.catalog: { delay: 'p95', safe: true }
 * async product(id: string) { ... }
 * ```
 */
export function Hedge(name?: string, overrides?: HedgeConfigInput): MethodDecorator {
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'hedge', name, overrides, decorator: 'Hedge' });
}
