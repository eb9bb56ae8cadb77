import type { BulkheadConfigInput } from '../policies/bulkhead/bulkhead.config';
import type { CircuitBreakerConfigInput } from '../policies/circuit-breaker/circuit-breaker.config';
import type { ErrorClass } from '../config/error-matcher';
import type { HedgeConfigInput } from '../policies/hedge/hedge.config';
import type { CacheConfigInput } from '../policies/cache/cache.config';
import type { RateLimiterConfigInput } from '../policies/rate-limiter/rate-limiter.config';
import type { RetryConfigInput } from '../policies/retry/retry.config';
import type { TimeLimiterConfigInput } from '../policies/time-limiter/time-limiter.config';

/** One fallback of a pipeline: the error classes it answers for and what it answers with. */
export interface PipelineFallback {
  /** The error classes this handler answers for (subclasses included, unless one has a handler of its own). */
  readonly errors: ErrorClass | readonly ErrorClass[];
  /** Answers instead of the call, given its error: a value, a Promise, or (for `observe`) an Observable. */
  readonly handler: (error: unknown) => unknown;
}

/**
 * The policies of a pipeline built with `registry.pipeline(options)`: each
 * one the name of an instance (declared, or made from `configs.default` as
 * a decorator's would be) or inline options (applied over `configs.default`).
 * The layers nest in the decorators' order (module option `order`), whatever
 * order they are listed in.
 */
export interface PipelineOptions {
  /** Names the inline instances and the fallback in events and metrics. Default `'pipeline'`. */
  readonly name?: string;
  /** A retry instance name, or inline retry options. */
  readonly retry?: string | RetryConfigInput;
  /** A circuit breaker instance name, or inline options. */
  readonly circuitBreaker?: string | CircuitBreakerConfigInput;
  /** A rate limiter instance name, or inline options. */
  readonly rateLimiter?: string | RateLimiterConfigInput;
  /** A time limiter instance name, or inline options. */
  readonly timeLimiter?: string | TimeLimiterConfigInput;
  /** A bulkhead instance name, or inline options. */
  readonly bulkhead?: string | BulkheadConfigInput;
  /**
   * A hedging instance name, or inline options; it sits right inside the
   * retry, as `@Hedge` does. A pipeline runs plain functions, so the instance
   * must be declared `safe: true` (running the function twice at once is harmless).
   */
  readonly hedge?: string | HedgeConfigInput;
  /**
   * A cache instance name, or inline options; it sits right outside the
   * retry, as `@Cache` does. A pipeline's function takes no arguments, so
   * its answers are kept under `key()`: one key for the pipeline unless
   * `key` reads something else.
   */
  readonly cache?: string | CacheConfigInput;
  /** Typed fallbacks: the most specific declared class of the error answers, as with `@Fallback`. */
  readonly fallback?: PipelineFallback | readonly PipelineFallback[];
}

/**
 * The second argument of `registry.pipeline(nameOrOptions, { key })`: the
 * pipeline's policies used per key, each key with its own instances made
 * from the named ones' configs (hedges and fallbacks stay shared).
 */
export interface PipelineKeyOptions {
  /**
   * A fixed key (`{ key: host }`: the pipeline of that host), or a function
   * of the call's arguments, which `execute(fn, { args })` and
   * `observe(source, { args })` pass (`{ key: (host: string) => host }`).
   */
  readonly key: string | ((...args: never[]) => string);
}
