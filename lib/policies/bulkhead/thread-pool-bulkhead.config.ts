import { availableParallelism } from 'node:os';
import { PolicySchema } from '../../config/schema';
import { BulkheadConfig } from './bulkhead.config';

/** Resolved settings of a Resilience4j thread-pool bulkhead, with Resilience4j's defaults. */
export interface ThreadPoolBulkheadConfig {
  /** Threads in the pool: here, calls running at once. Default: the number of CPUs (as in Java). */
  maxThreadPoolSize: number;
  /** Calls waiting for a thread: here, for a permit. Default 100. */
  queueCapacity: number;
  /**
   * Whether the `BulkheadFullError` it raises carries a stack trace (Resilience4j's
   * `writableStackTraceEnabled`). `false` spares the frame walk that makes a
   * refusal several times dearer than an admitted call. Default true.
   */
  writableStackTraceEnabled?: boolean;
}

/** Thread-pool bulkhead settings as written in options. */
export type ThreadPoolBulkheadConfigInput = Partial<ThreadPoolBulkheadConfig>;

/**
 * How a `thread-pool-bulkhead` section is read. Node has no thread pool, so
 * its instances run as bulkheads with `maxThreadPoolSize` calls at once and
 * `queueCapacity` waiters.
 */
export const THREAD_POOL_BULKHEAD_SCHEMA: PolicySchema<ThreadPoolBulkheadConfig> = {
  policy: 'threadPoolBulkhead',
  fields: {
    maxThreadPoolSize: { kind: 'integer', min: 1 },
    queueCapacity: { kind: 'integer', min: 0 },
    writableStackTraceEnabled: { kind: 'boolean' },
  },
  defaults: { maxThreadPoolSize: availableParallelism(), queueCapacity: 100, writableStackTraceEnabled: true },
};

/**
 * How long a queued call may wait: a thread pool's queue has no time bound
 * of its own (the call's time limit and deadline still apply), so this is
 * the longest wait one timer can hold (about 24.8 days).
 */
export const THREAD_POOL_QUEUE_WAIT_MS = 2 ** 31 - 1;

/** The thread-pool settings a bulkhead made by {@link asBulkhead} runs: its keys, for a change written in them. */
export function asThreadPool(config: BulkheadConfig): ThreadPoolBulkheadConfig {
  return {
    maxThreadPoolSize: config.maxConcurrentCalls,
    queueCapacity: config.queueCapacity ?? 0,
    writableStackTraceEnabled: config.writableStackTraceEnabled,
  };
}

/** The bulkhead a thread-pool bulkhead instance runs as. */
export function asBulkhead(config: ThreadPoolBulkheadConfig): BulkheadConfig {
  return {
    maxConcurrentCalls: config.maxThreadPoolSize,
    queueCapacity: config.queueCapacity,
    maxWaitDuration: config.queueCapacity > 0 ? THREAD_POOL_QUEUE_WAIT_MS : 0,
    writableStackTraceEnabled: config.writableStackTraceEnabled,
  };
}
