export * from './kernel/clock';
export * from './kernel/errors';
export type { EventSubscriber, Unsubscribe } from './kernel/events';
export type { ErrorClass, ErrorClassOrName } from './config/error-matcher';
export { parseDuration } from './config/duration';
export type { KeysOptions, PolicySection } from './config/schema';
export type { KeyFunction, KeyOption } from './decorators/metadata';
export type { Duration } from './config/duration';
export { DEFAULT_ORDER } from './kernel/resilience.constants';
export { fromSpringConfig } from './spring/spring-config';
export type { SpringConfigOptions } from './spring/spring-config';
export { watchSpringConfig } from './spring/watch-spring-config';
export type { ReloadOptions } from './registry/reload.options';
export type { ConfigChangedEvent, ReconfigurablePolicy } from './kernel/config-change';
export type {
  ThreadPoolBulkheadConfig,
  ThreadPoolBulkheadConfigInput,
} from './policies/bulkhead/thread-pool-bulkhead.config';
export type { PolicyKind } from './kernel/resilience.constants';
export type { DeadlineOptions, RegistryOptions } from './registry/registry.options';
export type { ResilienceModuleOptions } from './options/resilience.options';
export {
  currentSignal,
  deadlineHeaders,
  remainingTime,
  DEFAULT_DEADLINE_HEADER,
  DEFAULT_MAX_DEADLINE_BUDGET_MS,
} from './kernel/context';
export type { AttemptFunction } from './kernel/policy';
export type { ExecuteOptions } from './kernel/cancellation';
export { ResilienceModule } from './nest/resilience.module';
export { RESILIENCE_MODULE_OPTIONS, ResilienceConfigurableModule } from './nest/resilience.module-definition';
export type { ResilienceModuleAsyncOptions } from './nest/resilience.module-definition';
export { ResilienceRegistry } from './registry/resilience.registry';
export type { InstanceOptions } from './registry/resilience.registry';
export type {
  InstanceCreatedEvent,
  InstanceEvictedEvent,
  PolicyInstances,
  RegistryPolicy,
} from './registry/policy-instances';
export type { JitterKind, RetryConfig, RetryConfigInput, RetryExceptionRules } from './policies/retry/retry.config';
export { RetryBudget } from './kernel/retry-budget';
export type { RetryBudgetConfig } from './kernel/retry-budget';
export { RetryPolicy } from './policies/retry/retry.policy';
export type { RetryMetrics } from './policies/retry/retry.policy';
export type {
  RetryAttemptEvent,
  RetryEvent,
  RetryOutcomeEvent,
  RetryStopReason,
  RetryStoppedEvent,
} from './policies/retry/retry.events';
export { Retry } from './policies/retry/retry.decorator';
export type { TimeLimiterConfig, TimeLimiterConfigInput } from './policies/time-limiter/time-limiter.config';
export { TimeLimiter } from './policies/time-limiter/time-limiter.policy';
export type { AttemptContextMode } from './policies/time-limiter/time-limiter.policy';
export type { TimeLimiterEvent } from './policies/time-limiter/time-limiter.events';
export { Timeout } from './policies/time-limiter/time-limiter.decorator';
export type {
  CircuitBreakerConfig,
  CircuitBreakerConfigInput,
  CircuitBreakerExceptionRules,
  CircuitBreakerSharing,
  SlidingWindowType,
} from './policies/circuit-breaker/circuit-breaker.config';
export { CircuitBreaker } from './policies/circuit-breaker/circuit-breaker.decorator';
export type {
  CircuitBreakerStore,
  FleetListener,
  FleetOpenReport,
  FleetProbeClaim,
  FleetProbeRelease,
  FleetPublication,
  FleetTransition,
  FleetTransitionCause,
} from './policies/circuit-breaker/circuit-breaker-store';
export { DEFAULT_CIRCUIT_BREAKER_REDIS_PREFIX, RedisCircuitBreakerStore } from './stores/redis-circuit-breaker-store';
export type {
  RedisCircuitBreakerClient,
  RedisCircuitBreakerStoreOptions,
  RedisCircuitBreakerSubscriber,
} from './stores/redis-circuit-breaker-store';
export type { BulkheadConfig, BulkheadConfigInput } from './policies/bulkhead/bulkhead.config';
export { BulkheadPolicy } from './policies/bulkhead/bulkhead.policy';
export type { BulkheadMetrics } from './policies/bulkhead/bulkhead.policy';
export type {
  BulkheadCallFinishedEvent,
  BulkheadCallWaitedEvent,
  BulkheadCallPermittedEvent,
  BulkheadCallRejectedEvent,
} from './policies/bulkhead/bulkhead.events';
export { Bulkhead } from './policies/bulkhead/bulkhead.decorator';
export type { BulkheadOptions, BulkheadType } from './policies/bulkhead/bulkhead.decorator';
export type {
  RateLimitedCallOutcome,
  RateLimiterConfig,
  RateLimiterConfigInput,
} from './policies/rate-limiter/rate-limiter.config';
export { RateLimiterPolicy } from './policies/rate-limiter/rate-limiter.policy';
export type { RateLimiterDetailedMetrics, RateLimiterMetrics } from './policies/rate-limiter/rate-limiter.policy';
export type {
  RateLimiterAcquiredEvent,
  RateLimiterDrainedEvent,
  RateLimiterRefusedEvent,
  RateLimiterStoreFailureEvent,
  RateLimiterWaitEvent,
} from './policies/rate-limiter/rate-limiter.events';
export { RateLimiter } from './policies/rate-limiter/rate-limiter.decorator';
export type {
  RateLimiterStore,
  RateLimiterStoreAnswer,
  RateLimiterStoreRelease,
  RateLimiterStoreRequest,
} from './policies/rate-limiter/rate-limiter-store';
export { DEFAULT_RATE_LIMITER_REDIS_PREFIX, RedisRateLimiterStore } from './stores/redis-rate-limiter-store';
export type { RedisRateLimiterClient, RedisRateLimiterStoreOptions } from './stores/redis-rate-limiter-store';
export { FallbackPolicy } from './policies/fallback/fallback.policy';
export type { FallbackHandlerSpec } from './policies/fallback/fallback.policy';
export type { FallbackEvent } from './policies/fallback/fallback.events';
export { Fallback } from './policies/fallback/fallback.decorator';
export type { FallbackFn } from './policies/fallback/fallback.decorator';
export type {
  FallbackAnswer,
  FallbackError,
  FallbackErrors,
  FallbackFunctionMismatch,
  FallbackHandler,
} from './policies/fallback/fallback.handler';
export type { DecoratedMethod } from './decorators/decorated-method';
export { ResilienceExceptionFilter } from './nest/filter/resilience-exception.filter';
export {
  RESILIENCE_PROBLEMS,
  resilienceProblem,
  resilienceRpcError,
  retryAfterSeconds,
} from './kernel/resilience-problems';
export type {
  ProblemDetails,
  ProblemResponse,
  ResilienceErrorCode,
  ResilienceProblem,
  ResilienceRpcError,
} from './kernel/resilience-problems';
export { CircuitBreakerPolicy } from './policies/circuit-breaker/circuit-breaker.policy';
export { IllegalStateTransitionError } from './policies/circuit-breaker/illegal-state-transition.error';
export type { CircuitBreakerMetrics } from './policies/circuit-breaker/circuit-breaker.policy';
export type {
  CircuitBreakerCallNotPermittedEvent,
  CircuitBreakerErrorEvent,
  CircuitBreakerFailureRateExceededEvent,
  CircuitBreakerIgnoredErrorEvent,
  CircuitBreakerResetEvent,
  CircuitBreakerSlowCallRateExceededEvent,
  CircuitBreakerState,
  CircuitBreakerStateTransitionEvent,
  CircuitBreakerSuccessEvent,
} from './policies/circuit-breaker/circuit-breaker.events';
export { LoadShedder } from './features/load-shedding/load-shedder';
export type { Admission, Refusal, ShedReason } from './features/load-shedding/load-shedder';
export type { EventLoopDelayProbe } from './features/load-shedding/event-loop-delay';
export type {
  AdaptiveAlgorithm,
  AdaptiveLimitOptions,
  EventLoopDelayOptions,
  LoadSheddingOptions,
  PriorityHeaderOptions,
} from './features/load-shedding/load-shedding.options';
export { Priority, PRIORITY_LEVELS } from './features/load-shedding/priority.decorator';
export type { PriorityLevel } from './features/load-shedding/priority.decorator';
export * from './features/idempotency';
export type { PostgresIdempotencyStoreOptions } from './stores/postgres-idempotency-store';
export { DEFAULT_IDEMPOTENCY_TABLE, PostgresIdempotencyStore } from './stores/postgres-idempotency-store';
export type { RedisIdempotencyStoreOptions, RedisScriptClient } from './stores/redis-idempotency-store';
export { DEFAULT_IDEMPOTENCY_REDIS_PREFIX, RedisIdempotencyStore } from './stores/redis-idempotency-store';
export { DEFAULT_OUTBOX_TABLE, PostgresOutboxStore } from './stores/postgres-outbox-store';
export type { PostgresOutboxStoreOptions } from './stores/postgres-outbox-store';
export type { StoreWarn } from './stores/pool-errors';
export * from './features/outbox';
export { RedisStreamsPublisher } from './stores/redis-streams-publisher';
export type { RedisStreamsPublisherClient, RedisStreamsPublisherOptions } from './stores/redis-streams-publisher';
export * from './observability';
export { ResiliencePipeline } from './engine/resilience-pipeline';
export type { PipelineFallback, PipelineKeyOptions, PipelineOptions } from './registry/pipeline.options';
export { FaultInjector } from './features/fault-injection/fault-injector';
export type { ActiveFault, FaultInjectedEvent, FaultKind } from './features/fault-injection/fault-injector';
export type {
  FaultInjectionOptions,
  FaultSpec,
  InjectedError,
  ResolvedFault,
} from './features/fault-injection/fault-injection.options';
export { recordEvents } from './testing/event-recorder';
export type { EventRecorder, RecordedPolicyEvent } from './testing/event-recorder';
export { Hedge } from './policies/hedge/hedge.decorator';
export { HedgePolicy } from './policies/hedge/hedge.policy';
export type { HedgeMetrics } from './policies/hedge/hedge.policy';
export type { HedgeBudgetDeniedEvent, HedgeEvent, HedgeWinnerEvent } from './policies/hedge/hedge.events';
export type { HedgeConfig, HedgeConfigInput, LatencyPercentile } from './policies/hedge/hedge.config';
export { Cache } from './policies/cache/cache.decorator';
export { CachePolicy } from './policies/cache/cache.policy';
export type { CacheMetrics } from './policies/cache/cache.policy';
export type { CacheResult, CacheResultEvent } from './policies/cache/cache.events';
export type { CacheConfig, CacheConfigInput, CacheStaleInfo } from './policies/cache/cache.config';
export { MemoryCacheStore } from './policies/cache/cache-store';
export type { CacheEntry, CacheStore } from './policies/cache/cache-store';
export {
  DEFAULT_CACHE_REDIS_PREFIX,
  DEFAULT_CACHE_REDIS_TIMEOUT_MS,
  RedisCacheStore,
} from './stores/redis-cache-store';
export type { RedisCacheClient, RedisCacheStoreOptions } from './stores/redis-cache-store';
