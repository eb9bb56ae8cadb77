import { addLayer } from '../metadata';
import { BulkheadConfigInput } from './bulkhead.config';

/**
 * Limits concurrent calls of the method with the named bulkhead; excess
 * callers wait up to `maxWaitDuration` in a bounded queue, then get
 * `BulkheadFullError`.
 */
export function Bulkhead(name: string, overrides?: BulkheadConfigInput): MethodDecorator {
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'bulkhead', name, overrides, decorator: 'Bulkhead' });
}
