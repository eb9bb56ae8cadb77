import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { EventStream, Unsubscribe } from '../kernel/events';
import { EventTap, InstanceSnapshot, PolicyTelemetry, SpanEventSink, tapStream } from '../kernel/telemetry';
import { ObservedInstance } from './instance-catalog';
import { ResilienceSpanEvents } from './tracing/span-events';

interface ValveEvent {
  readonly name: string;
  readonly opening: number;
  readonly error?: unknown;
}

/**
 * A policy kind no listener knows of: a valve that throttles calls by an
 * opening in percent. It reports to the listeners only through its own
 * telemetry channel.
 */
class Valve implements PolicyTelemetry {
  private readonly throttled = new EventStream<ValveEvent>();

  constructor(readonly name: string) {}

  /** A call was let through at `opening` percent, or refused with `error`. */
  throttle(opening: number, error?: unknown): void {
    if (this.throttled.active) this.throttled.emit({ name: this.name, opening, error });
  }

  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'THROTTLED', this.throttled.subscribe);
    return into;
  }

  snapshot(): InstanceSnapshot {
    return {};
  }

  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.throttled.subscribe(({ name, opening, error }) => {
        const attributes = { 'resilience.policy': 'valve', 'resilience.instance': name, 'valve.opening': opening };
        if (error === undefined) trace.event('resilience.valve.throttled', attributes);
        else trace.failure('resilience.valve.refused', attributes, error);
      }),
    ];
  }
}

/** The valve as the catalog hands instances to the listeners. */
const observed = (valve: Valve): ObservedInstance =>
  ({ policy: 'valve', name: valve.name, instance: valve, derived: false }) as unknown as ObservedInstance;

class Closed extends Error {}

describe('a policy kind the listeners do not know of', () => {
  it('gets its span events on the active span through its own telemetry channel', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const contextManager = new AsyncLocalStorageContextManager();
    otel.context.setGlobalContextManager(contextManager.enable());
    try {
      const valve = new Valve('intake');
      const events = new ResilienceSpanEvents(otel);
      events.bind(observed(valve));
      valve.throttle(10);
      provider.getTracer('test').startActiveSpan('call', (span) => {
        valve.throttle(40);
        valve.throttle(0, new Closed('closed'));
        span.end();
      });
      events.close();
      valve.throttle(70);
      const [span] = exporter.getFinishedSpans();
      expect(exporter.getFinishedSpans()).toHaveLength(1);
      expect(span.events.map(({ name, attributes }) => ({ name, attributes }))).toEqual([
        {
          name: 'resilience.valve.throttled',
          attributes: { 'resilience.policy': 'valve', 'resilience.instance': 'intake', 'valve.opening': 40 },
        },
        {
          name: 'resilience.valve.refused',
          attributes: {
            'resilience.policy': 'valve',
            'resilience.instance': 'intake',
            'valve.opening': 0,
            'error.type': 'Closed',
          },
        },
      ]);
    } finally {
      otel.context.disable();
      contextManager.disable();
    }
  });
});
