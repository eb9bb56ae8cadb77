import type { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import type { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import type { RateLimiterPolicy } from '../policies/rate-limiter/rate-limiter.policy';
import type { RetryPolicy } from '../policies/retry/retry.policy';
import type { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';

/** The instance classes, by policy. */
export interface PolicyInstances {
  /** A retry instance. */
  retry: RetryPolicy;
  /** A circuit breaker instance. */
  circuitBreaker: CircuitBreakerPolicy;
  /** A bulkhead instance (thread-pool bulkheads included). */
  bulkhead: BulkheadPolicy;
  /** A time limiter instance. */
  timeLimiter: TimeLimiter;
  /** A rate limiter instance. */
  rateLimiter: RateLimiterPolicy;
}

/** A policy whose instances the registry creates. */
export type RegistryPolicy = keyof PolicyInstances;

/** Announced whenever the registry creates an instance (at bootstrap or later). */
export interface InstanceCreatedEvent<P extends RegistryPolicy = RegistryPolicy> {
  /** The policy the instance belongs to. */
  readonly policy: P;
  /** The instance's name (a derived instance shares its base instance's name). */
  readonly name: string;
  /** The instance just created. */
  readonly instance: PolicyInstances[P];
  /** True for a method's private instance made from decorator overrides. */
  readonly derived: boolean;
  /** The key, for the instance of one key of a named (or derived) instance; else undefined. */
  readonly key?: string;
}

/** Announced whenever the registry evicts an instance: an idle or least recently used key, or undeclared name. */
export interface InstanceEvictedEvent<P extends RegistryPolicy = RegistryPolicy> {
  /** The policy the instance belongs to. */
  readonly policy: P;
  /** The instance's name. */
  readonly name: string;
  /** The key evicted, for an instance used per key; undefined for an undeclared name. */
  readonly key?: string;
  /** The instance evicted. */
  readonly instance: PolicyInstances[P];
}
