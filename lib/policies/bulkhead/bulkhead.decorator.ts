import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { BulkheadConfigInput } from './bulkhead.config';

/** Resilience4j's bulkhead types: a semaphore bulkhead (`bulkhead` section) or a thread-pool one (`threadPoolBulkhead`). */
export type BulkheadType = 'SEMAPHORE' | 'THREADPOOL';

/** The second argument of `@Bulkhead`: which bulkhead of the name, and per-method overrides of its settings. */
export type BulkheadOptions = BulkheadConfigInput &
  KeyOption & {
    /**
     * `SEMAPHORE` (default, as in Resilience4j) uses the `bulkhead` instance of
     * the name; `THREADPOOL` the `threadPoolBulkhead` one, so one name may be
     * declared in both sections.
     */
    type?: BulkheadType;
  };

/** What the explorer reads from a `@Bulkhead` layer besides its overrides. */
export interface BulkheadLayerOptions {
  readonly type: unknown;
}

/**
 * Limits concurrent calls of the method with the named bulkhead; excess
 * callers wait up to `maxWaitDuration` in a bounded queue, then get
 * `BulkheadFullError`. With `{ type: 'THREADPOOL' }`, the thread-pool
 * bulkhead of the name (`threadPoolBulkhead` section) limits them. With
 * `key`, each key of the method's arguments gets a bulkhead of its own.
 */
export function Bulkhead(name: string, options?: BulkheadOptions): MethodDecorator {
  const { key: keyOf, overrides: settings } = splitKey(options);
  const { type, ...overrides } = settings ?? {};
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, {
      kind: 'bulkhead',
      name,
      overrides: type !== undefined && Object.keys(overrides).length === 0 ? undefined : settings && overrides,
      key: keyOf,
      options: { type } satisfies BulkheadLayerOptions,
      decorator: 'Bulkhead',
    });
}
