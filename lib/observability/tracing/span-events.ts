import type { Attributes, Span } from '@opentelemetry/api';
import { Unsubscribe } from '../../kernel/events';
import type { PolicyTelemetry, SpanEventSink } from '../../kernel/telemetry';
import { FaultInjector } from '../../features/fault-injection/fault-injector';
import { IdempotencyRegistry } from '../../features/idempotency/idempotency.registry';
import { ObservedHedge, ObservedInstance, ObservedSeries } from '../instance-catalog';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
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
  /** The listeners of each instance bound, dropped when the registry evicts it (an idle key). */
  private readonly bound = new Map<object, Unsubscribe[]>();

  /** @param otel - the OpenTelemetry API the active span is read from */
  constructor(private readonly otel: OpenTelemetry) {}

  /** Adds `name` with `attributes` to the active span, if one is recording. */
  record(name: string, attributes: Attributes): void {
    this.recording()?.addEvent(name, attributes);
  }

  /** Where the policies write their span events; an error's attributes are read only when a span records them. */
  private readonly sink: SpanEventSink = {
    event: (name, attributes) => this.recording()?.addEvent(name, attributes),
    failure: (name, attributes, error) =>
      this.recording()?.addEvent(name, Object.assign(attributes, errorEventAttributes(error))),
  };

  /** The active span, if one is recording. */
  private recording(): Span | undefined {
    const span = this.otel.trace.getActiveSpan();
    return span !== undefined && span.isRecording() ? span : undefined;
  }

  /**
   * Listens to the events of one instance: those it writes through its
   * telemetry channel's `traceEvents`, with the key of the instance of one
   * key as `resilience.instance.key`.
   */
  bind(observed: ObservedInstance): void {
    const channel: PolicyTelemetry = observed.instance;
    if (channel.traceEvents === undefined) return;
    const key = 'key' in observed ? observed.key : undefined;
    this.bound.set(observed.instance, channel.traceEvents(key === undefined ? this.sink : this.keyedSink(key)));
  }

  /** Stops listening to an instance (a hedge included) the registry evicted. */
  unbind(observed: ObservedSeries): void {
    for (const unsubscribe of this.bound.get(observed.instance) ?? []) unsubscribe();
    this.bound.delete(observed.instance);
  }

  /** The sink of the instance of `key`: each event also names the key. */
  private keyedSink(key: string): SpanEventSink {
    return {
      event: (name, attributes) => this.sink.event(name, { ...attributes, [A.key]: key }),
      failure: (name, attributes, error) => this.sink.failure(name, { ...attributes, [A.key]: key }, error),
    };
  }

  /**
   * Listens to the hedges and answers of one hedge instance, with the key
   * of the hedge of one key as `resilience.instance.key`.
   */
  bindHedge(observed: ObservedHedge): void {
    const { instance: hedge, key } = observed;
    const sink = key === undefined ? this.sink : this.keyedSink(key);
    this.bound.set(hedge, [
      hedge.onHedge(({ name, attempt }) =>
        sink.event(E.hedge, {
          [A.policy]: 'hedge',
          [A.instance]: name,
          [A.hedgeKind]: 'started',
          [A.attemptNumber]: attempt,
        }),
      ),
      hedge.onWinner(({ name, attempt, cancelled }) =>
        sink.event(E.hedge, {
          [A.policy]: 'hedge',
          [A.instance]: name,
          [A.hedgeKind]: 'won',
          [A.attemptNumber]: attempt,
          [A.hedgeCancelled]: cancelled,
        }),
      ),
    ]);
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
    for (const listeners of this.bound.values()) for (const unsubscribe of listeners) unsubscribe();
    this.bound.clear();
  }
}
