import { Duration } from '../../config/duration';
import { durationOption, invalidOption, numberOption, objectOption, OptionReader } from '../../config/option-readers';
import { integerOption } from '../../config/option-readers';
import { PolicySchema } from '../../config/schema';
import { RetryBudgetConfig } from '../../kernel/retry-budget';

/** A percentile of the instance's recent latencies, `'p50'` to `'p99'` (`'p99.9'` too). */
export type LatencyPercentile = `p${number}`;

/** Resolved settings of a hedge instance (durations in ms). */
export interface HedgeConfig {
  /**
   * How long an attempt may go unanswered before the next one starts: a
   * duration, or a percentile of the instance's recent latencies. Default `'p95'`.
   */
  delay: number | LatencyPercentile;
  /** Attempts started besides the first. Default 1. */
  maxHedgedAttempts: number;
  /**
   * The retry budget every hedge withdraws a token from: the name of a retry
   * instance (its `budget`), or a budget of this instance's own, which each
   * successful call refills. Default `{ ratio: 0.1, maxTokens: 10 }`.
   */
  budget: RetryBudgetConfig | string;
  /** The method is safe to run more than once at a time, without `@Idempotent` (or with an optional key). Default false. */
  safe: boolean;
  /** How many recent latencies a percentile `delay` is taken over. Default 1000. */
  latencyWindowSize: number;
}

/** Hedge settings as written in options: `delay` a duration or a percentile such as `'p95'`, keys kebab-case too. */
export type HedgeConfigInput = Partial<Omit<HedgeConfig, 'delay'> & { delay: Duration }>;

const PERCENTILE = /^p(\d{2}(?:\.\d+)?)$/i;
const DELAY_EXPECTED = 'a duration (ms number or "250ms", "2s") or a percentile \'p50\' to \'p99.9\'';
const duration = durationOption({ expected: DELAY_EXPECTED });

/** The quantile in (0, 1) a percentile delay names, e.g. 0.95 for `'p95'`. */
export function quantileOf(delay: LatencyPercentile): number {
  return Number(delay.slice(1)) / 100;
}

const delayOption: OptionReader<unknown> = (value, place, key) => {
  if (typeof value === 'string') {
    const match = PERCENTILE.exec(value.trim());
    if (match !== null) {
      const percent = Number(match[1]);
      if (percent < 50 || percent >= 100) return invalidOption(place, key, DELAY_EXPECTED, value);
      return `p${match[1]}`;
    }
  }
  return duration(value, place, key);
};

const ownBudget = objectOption({
  ratio: numberOption({ min: 0, max: 1, exclusiveMin: true }),
  maxTokens: integerOption(1),
});

const budgetOption: OptionReader<unknown> = (value, place, key) => {
  if (typeof value === 'string') {
    if (value.trim() === '') return invalidOption(place, key, 'a retry instance name or { ratio, maxTokens }', value);
    return value;
  }
  return ownBudget(value, place, key);
};

/** The hedge budget used when none is configured: hedges may add at most a tenth to the load. */
export const DEFAULT_HEDGE_BUDGET: RetryBudgetConfig = Object.freeze({ ratio: 0.1, maxTokens: 10 });

export const HEDGE_SCHEMA: PolicySchema<HedgeConfig> = {
  policy: 'hedging',
  fields: {
    delay: { kind: 'custom', read: delayOption },
    maxHedgedAttempts: { kind: 'integer', min: 1, max: 10 },
    budget: { kind: 'custom', read: budgetOption },
    safe: { kind: 'boolean' },
    latencyWindowSize: { kind: 'integer', min: 10, max: 100_000 },
  },
  defaults: {
    delay: 'p95',
    maxHedgedAttempts: 1,
    budget: DEFAULT_HEDGE_BUDGET,
    safe: false,
    latencyWindowSize: 1000,
  },
};
