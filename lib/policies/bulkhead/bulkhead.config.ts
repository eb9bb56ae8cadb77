import { Duration } from '../../config/duration';
import { PolicySchema } from '../../config/schema';

/** Resolved settings of a bulkhead (durations in ms). */
export interface BulkheadConfig {
  /** Calls allowed to run at once; 0 refuses every call at once. Default 25. */
  maxConcurrentCalls: number;
  /** Longest a call waits for a permit; 0 refuses at once when all are taken. Default 0. */
  maxWaitDuration: number;
  /** Most calls allowed to wait for a permit; further callers are refused at once. Default: `maxConcurrentCalls`. */
  queueCapacity?: number;
  /**
   * Whether the `BulkheadFullError` it raises carries a stack trace (Resilience4j's
   * `writableStackTraceEnabled`). `false` spares the frame walk that makes a
   * refusal several times dearer than an admitted call. Default true.
   */
  writableStackTraceEnabled?: boolean;
}

/** Bulkhead settings as written in options. */
export type BulkheadConfigInput = Partial<Omit<BulkheadConfig, 'maxWaitDuration'> & { maxWaitDuration: Duration }>;

/** How `bulkhead` settings are read, checked and defaulted. */
export const BULKHEAD_SCHEMA: PolicySchema<BulkheadConfig> = {
  policy: 'bulkhead',
  fields: {
    maxConcurrentCalls: { kind: 'integer', min: 0 },
    maxWaitDuration: { kind: 'duration' },
    queueCapacity: { kind: 'integer', min: 0 },
    writableStackTraceEnabled: { kind: 'boolean' },
  },
  defaults: { maxConcurrentCalls: 25, maxWaitDuration: 0, queueCapacity: undefined, writableStackTraceEnabled: true },
};
