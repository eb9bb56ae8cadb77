import { Duration } from '../../config/duration';
import { PolicySchema } from '../../config/schema';

/** Resolved settings of a time limiter (durations in ms). */
export interface TimeLimiterConfig {
  /**
   * Longest an attempt may run. Default 1 s. 0 is legal, as in Resilience4j:
   * only an attempt already settled when the zero-delay timer fires succeeds.
   */
  timeoutDuration: number;
  /** Abort the attempt's `AbortSignal` when it times out. Default true. */
  cancelRunningFuture: boolean;
}

/** Time limiter settings as written in options. */
export type TimeLimiterConfigInput = Partial<
  Omit<TimeLimiterConfig, 'timeoutDuration'> & { timeoutDuration: Duration }
>;

export const TIME_LIMITER_SCHEMA: PolicySchema<TimeLimiterConfig> = {
  policy: 'timeLimiter',
  fields: {
    timeoutDuration: { kind: 'duration' },
    cancelRunningFuture: { kind: 'boolean' },
  },
  defaults: { timeoutDuration: 1000, cancelRunningFuture: true },
};
