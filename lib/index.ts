export * from './clock';
export * from './errors';
export type { EventSubscriber, Unsubscribe } from './events';
export type { ErrorClass, ErrorClassOrName } from './error-matcher';
export { parseDuration } from './config/duration';
export type { PolicySection } from './config/schema';
export type { Duration } from './config/duration';
export { DEFAULT_ORDER } from './resilience.constants';
export { fromSpringConfig } from './spring-config';
export type { SpringConfigOptions } from './spring-config';
export type { ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigInput } from './bulkhead/thread-pool-bulkhead.config';
export type { PolicyKind } from './resilience.constants';
export type { DeadlineOptions, ResilienceModuleOptions } from './resilience.options';
export {
  currentSignal,
  deadlineHeaders,
  remainingTime,
  DEFAULT_DEADLINE_HEADER,
  DEFAULT_MAX_DEADLINE_BUDGET_MS,
} from './context';
export type { AttemptFunction } from './policy';
export type { ExecuteOptions } from './cancellation';
export { ResilienceModule } from './resilience.module';
export { RESILIENCE_MODULE_OPTIONS, ResilienceConfigurableModule } from './resilience.module-definition';
export type { ResilienceModuleAsyncOptions } from './resilience.module-definition';
export { ResilienceRegistry } from './resilience.registry';
export type { InstanceCreatedEvent, PolicyInstances, RegistryPolicy } from './resilience.registry';
export type {
  JitterKind,
  RetryBudgetConfig,
  RetryConfig,
  RetryConfigInput,
  RetryExceptionRules,
} from './retry/retry.config';
export { RetryPolicy } from './retry/retry';
export type {
  RetryAttemptEvent,
  RetryEvent,
  RetryMetrics,
  RetryOutcomeEvent,
  RetryStopReason,
  RetryStoppedEvent,
} from './retry/retry';
export { Retry } from './retry/retry.decorator';
export type { TimeLimiterConfig, TimeLimiterConfigInput } from './time-limiter/time-limiter.config';
export { TimeLimiter } from './time-limiter/time-limiter';
export type { AttemptContextMode, TimeLimiterEvent } from './time-limiter/time-limiter';
export { Timeout } from './time-limiter/timeout.decorator';
export type {
  CircuitBreakerConfig,
  CircuitBreakerConfigInput,
  CircuitBreakerExceptionRules,
  SlidingWindowType,
} from './circuit-breaker/circuit-breaker.config';
export { CircuitBreaker } from './circuit-breaker/circuit-breaker.decorator';
export type { BulkheadConfig, BulkheadConfigInput } from './bulkhead/bulkhead.config';
export { BulkheadPolicy } from './bulkhead/bulkhead-policy';
export type {
  BulkheadCallFinishedEvent,
  BulkheadCallWaitedEvent,
  BulkheadCallPermittedEvent,
  BulkheadCallRejectedEvent,
  BulkheadMetrics,
} from './bulkhead/bulkhead-policy';
export { Bulkhead } from './bulkhead/bulkhead.decorator';
export type { BulkheadOptions, BulkheadType } from './bulkhead/bulkhead.decorator';
export type {
  RateLimitedCallOutcome,
  RateLimiterConfig,
  RateLimiterConfigInput,
} from './rate-limiter/rate-limiter.config';
export { RateLimiterPolicy } from './rate-limiter/rate-limiter-policy';
export type {
  RateLimiterAcquiredEvent,
  RateLimiterDetailedMetrics,
  RateLimiterDrainedEvent,
  RateLimiterMetrics,
  RateLimiterRefusedEvent,
  RateLimiterStoreFailureEvent,
  RateLimiterWaitEvent,
} from './rate-limiter/rate-limiter-policy';
export { RateLimiter } from './rate-limiter/rate-limiter.decorator';
export type {
  RateLimiterStore,
  RateLimiterStoreAnswer,
  RateLimiterStoreRelease,
  RateLimiterStoreRequest,
} from './rate-limiter/rate-limiter-store';
export { DEFAULT_RATE_LIMITER_REDIS_PREFIX, RedisRateLimiterStore } from './rate-limiter/redis-rate-limiter-store';
export type { RedisRateLimiterClient, RedisRateLimiterStoreOptions } from './rate-limiter/redis-rate-limiter-store';
export { FallbackPolicy } from './fallback/fallback';
export type { FallbackEvent, FallbackHandlerSpec } from './fallback/fallback';
export { Fallback } from './fallback/fallback.decorator';
export type { FallbackFn } from './fallback/fallback.decorator';
export { ResilienceExceptionFilter } from './filter/resilience-exception.filter';
export {
  RESILIENCE_PROBLEMS,
  resilienceProblem,
  resilienceRpcError,
  retryAfterSeconds,
} from './filter/resilience-problems';
export type {
  ProblemDetails,
  ProblemResponse,
  ResilienceErrorCode,
  ResilienceProblem,
  ResilienceRpcError,
} from './filter/resilience-problems';
export { CircuitBreakerPolicy } from './circuit-breaker/circuit-breaker-policy';
export { IllegalStateTransitionError } from './circuit-breaker/illegal-state-transition.error';
export type { CircuitBreakerMetrics } from './circuit-breaker/circuit-breaker-policy';
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
} from './circuit-breaker/circuit-breaker.events';
export { LoadShedder } from './load-shedding/load-shedder';
export type { Admission, Refusal, ShedReason } from './load-shedding/load-shedder';
export type { EventLoopDelayProbe } from './load-shedding/event-loop-delay';
export type {
  AdaptiveAlgorithm,
  AdaptiveLimitOptions,
  EventLoopDelayOptions,
  LoadSheddingOptions,
  PriorityHeaderOptions,
} from './load-shedding/load-shedding.options';
export { Priority, PRIORITY_LEVELS } from './load-shedding/priority.decorator';
export type { PriorityLevel } from './load-shedding/priority.decorator';
export * from './idempotency';
export * from './outbox';
export * from './observability';
export { ResiliencePipeline } from './pipeline/resilience-pipeline';
export type { PipelineFallback, PipelineOptions } from './pipeline/pipeline.options';
export { FaultInjector } from './fault-injection/fault-injector';
export type { ActiveFault, FaultInjectedEvent, FaultKind } from './fault-injection/fault-injector';
export type {
  FaultInjectionOptions,
  FaultSpec,
  InjectedError,
  ResolvedFault,
} from './fault-injection/fault-injection.options';
export { recordEvents } from './testing/event-recorder';
export type { EventRecorder, RecordedPolicyEvent } from './testing/event-recorder';
export { Hedge } from './hedge/hedge.decorator';
export { HedgePolicy } from './hedge/hedge-policy';
export type { HedgeBudgetDeniedEvent, HedgeEvent, HedgeMetrics, HedgeWinnerEvent } from './hedge/hedge-policy';
export type { HedgeConfig, HedgeConfigInput, LatencyPercentile } from './hedge/hedge.config';
