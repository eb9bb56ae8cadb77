import type { Attributes } from '@opentelemetry/api';
import { Unsubscribe } from '../../kernel/events';
import { HedgePolicy } from '../../policies/hedge/hedge.policy';
import { FaultInjector } from '../../features/fault-injection/fault-injector';
import { IdempotencyRegistry } from '../../features/idempotency/idempotency.registry';
import { ObservedInstance } from '../instance-catalog';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from './span-attributes';
import { OpenTelemetry } from './tracing.peer';
import { errorEventAttributes } from './error-attributes';

/**
 * Writes the events of every policy instance it is bound to on the span
 * active when each happens: nothing when no span is active or recording.
 * It only listens: the policies emit an event only while someone listens,
 * so without it they do no more work than before.
 */
export class ResilienceSpanEvents {
  private readonly subscriptions: Unsubscribe[] = [];

  /** @param otel - the OpenTelemetry API the active span is read from */
  constructor(private readonly otel: OpenTelemetry) {}

  /** Adds `name` with `attributes` to the active span, if one is recording. */
  record(name: string, attributes: Attributes): void {
    const span = this.otel.trace.getActiveSpan();
    if (span === undefined || !span.isRecording()) return;
    span.addEvent(name, attributes);
  }

  /** Listens to the events of one instance. */
  bind(observed: ObservedInstance): void {
    const on = (unsubscribe: Unsubscribe): void => void this.subscriptions.push(unsubscribe);
    switch (observed.policy) {
      case 'retry': {
        const retry = observed.instance;
        on(
          retry.onAttempt(({ name, attempt }) =>
            this.record(E.attempt, { [A.policy]: 'retry', [A.instance]: name, [A.attemptNumber]: attempt }),
          ),
        );
        on(
          retry.onRetry(({ name, attempt, waitMs, error }) =>
            this.record(E.retry, {
              [A.policy]: 'retry',
              [A.instance]: name,
              [A.attemptNumber]: attempt,
              [A.retryWaitMs]: waitMs,
              ...errorEventAttributes(error),
            }),
          ),
        );
        on(
          retry.onRetryStopped(({ name, attempt, reason, error }) =>
            this.record(E.retryStopped, {
              [A.policy]: 'retry',
              [A.instance]: name,
              [A.attemptNumber]: attempt,
              [A.retryStopReason]: reason,
              ...errorEventAttributes(error),
            }),
          ),
        );
        break;
      }
      case 'circuitBreaker':
        on(
          observed.instance.onCallNotPermitted(({ name, state }) =>
            this.record(E.circuitBreakerNotPermitted, {
              [A.policy]: 'circuit_breaker',
              [A.instance]: name,
              [A.circuitBreakerState]: state,
            }),
          ),
        );
        break;
      case 'bulkhead':
        on(
          observed.instance.onCallWaited(({ name, waitMs }) =>
            this.record(E.bulkheadWaited, { [A.policy]: 'bulkhead', [A.instance]: name, [A.bulkheadWaitMs]: waitMs }),
          ),
        );
        on(
          observed.instance.onCallRejected(({ name, reason, error }) =>
            this.record(E.bulkheadRejected, {
              [A.policy]: 'bulkhead',
              [A.instance]: name,
              [A.bulkheadReason]: reason,
              ...errorEventAttributes(error),
            }),
          ),
        );
        break;
      case 'timeLimiter':
        on(
          observed.instance.onTimeoutInCallContext(({ name, error }) =>
            this.record(E.timeout, { [A.policy]: 'time_limiter', [A.instance]: name, ...errorEventAttributes(error) }),
          ),
        );
        break;
      case 'rateLimiter':
        on(
          observed.instance.onWait(({ name, waitMs }) =>
            this.record(E.rateLimiterWaited, {
              [A.policy]: 'rate_limiter',
              [A.instance]: name,
              [A.rateLimiterWaitMs]: waitMs,
            }),
          ),
        );
        on(
          observed.instance.onFailure(({ name, error }) =>
            this.record(E.rateLimiterRejected, {
              [A.policy]: 'rate_limiter',
              [A.instance]: name,
              ...errorEventAttributes(error),
            }),
          ),
        );
        break;
      case 'fallback':
        on(
          observed.instance.onFallback(({ name, errorClass, error }) =>
            this.record(E.fallback, {
              [A.policy]: 'fallback',
              [A.instance]: name,
              [A.fallbackHandler]: errorClass.name,
              ...errorEventAttributes(error),
            }),
          ),
        );
        break;
      case 'cache':
        on(
          observed.instance.onResult(({ name, result, ageMs }) => {
            if (result !== 'hit' && result !== 'stale') return;
            this.record(result === 'hit' ? E.cacheHit : E.cacheStale, {
              [A.policy]: 'cache',
              [A.instance]: name,
              [A.cacheResult]: result,
              [A.cacheAgeMs]: ageMs,
            });
          }),
        );
        break;
    }
  }

  /** Listens to a hedge instance's hedges and answers. */
  bindHedge(hedge: HedgePolicy): void {
    this.subscriptions.push(
      hedge.onHedge(({ name, attempt }) =>
        this.record(E.hedge, {
          [A.policy]: 'hedge',
          [A.instance]: name,
          [A.hedgeKind]: 'started',
          [A.attemptNumber]: attempt,
        }),
      ),
      hedge.onWinner(({ name, attempt, cancelled }) =>
        this.record(E.hedge, {
          [A.policy]: 'hedge',
          [A.instance]: name,
          [A.hedgeKind]: 'won',
          [A.attemptNumber]: attempt,
          [A.hedgeCancelled]: cancelled,
        }),
      ),
    );
  }

  /** Listens to the faults injected, each on the span of the call it was injected into. */
  bindFaults(faults: Pick<FaultInjector, 'onFaultInjected'>): void {
    this.subscriptions.push(
      faults.onFaultInjected(({ name, kind, durationMs }) =>
        this.record(E.fault, {
          [A.policy]: 'fault_injection',
          [A.instance]: name,
          [A.faultKind]: kind,
          ...(durationMs === undefined ? {} : { [A.faultDurationMs]: durationMs }),
          [A.faultInjected]: true,
        }),
      ),
    );
  }

  /** Listens to `@Idempotent`'s replays. */
  bindIdempotency(idempotency: Pick<IdempotencyRegistry, 'onOutcome'>): void {
    this.subscriptions.push(
      idempotency.onOutcome(({ outcome, name }) => {
        if (outcome === 'replayed')
          this.record(E.idempotencyReplayed, { [A.policy]: 'idempotency', [A.instance]: name });
      }),
    );
  }

  /** Stops listening to every instance. */
  close(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
  }
}
