import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { EventStream, Unsubscribe } from '../kernel/events';
import {
  errorText,
  EventTap,
  HealthReport,
  InstanceSnapshot,
  PolicyTelemetry,
  SpanEventSink,
  tapStream,
  TelemetryLog,
} from '../kernel/telemetry';
import { Logger } from '@nestjs/common';
import { VirtualClock } from '../kernel/clock';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { InstanceCatalog, ObservedInstance } from './instance-catalog';
import { ResilienceEventLogger } from './resilience-event-logger';
import { ResilienceHealthIndicator } from './resilience-health.indicator';
import { LoadShedder } from '../features/load-shedding/load-shedder';
import { readLoadSheddingOptions } from '../features/load-shedding/load-shedding.options';
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
  private opening = 100;

  constructor(readonly name: string) {}

  /** A call was let through at `opening` percent, or refused with `error`. */
  throttle(opening: number, error?: unknown): void {
    this.opening = opening;
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

  logEvents(log: TelemetryLog): Unsubscribe[] {
    const refused = log.episode<unknown>(
      (onActivity) => this.throttled.subscribe(onActivity),
      (first) => log.warn(`valve '${this.name}' refuses calls (${errorText(first)})`),
      (count, ms) => log.log(`valve '${this.name}' lets calls through again; ${count} refused over ${ms} ms`),
    );
    return [
      this.throttled.subscribe(({ opening, error }) => {
        if (error !== undefined) refused(error);
        else if (opening === 100) log.log(`valve '${this.name}' wide open`);
      }),
    ];
  }

  healthReport(): HealthReport {
    const row = { status: this.opening === 0 ? 'DOWN' : 'UP', opening: this.opening };
    return { check: 'rateLimiters', row };
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

/** The catalog of an application's instances, with one more instance given. */
class CatalogOf extends InstanceCatalog {
  constructor(
    registry: ResilienceRegistry,
    private readonly only: ObservedInstance,
  ) {
    super(registry);
  }

  override watch(
    visit: (observed: ObservedInstance) => void,
    evicted?: (observed: ObservedInstance) => void,
  ): Unsubscribe {
    visit(this.only);
    return super.watch(visit, evicted);
  }
}

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

  it('gets its log lines and episodes through its own telemetry channel', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({ clock, logging: { quietPeriod: '1s' } });
    const valve = new Valve('intake');
    const logger = new ResilienceEventLogger(
      new CatalogOf(registry, observed(valve)),
      new IdempotencyRegistry(registry),
    );
    const lines: Array<[string, string]> = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void lines.push(['warn', String(message)]));
    jest
      .spyOn(Logger.prototype, 'log')
      .mockImplementation((message: unknown) => void lines.push(['log', String(message)]));
    try {
      logger.onApplicationBootstrap();
      valve.throttle(100);
      for (let i = 0; i < 5; i++) {
        valve.throttle(0, new Closed('shut for maintenance'));
        await clock.advance(100);
      }
      valve.throttle(50);
      await clock.advance(2_000);
      valve.throttle(50);
      logger.onModuleDestroy();
      valve.throttle(100);
      expect(lines).toEqual([
        ['log', "valve 'intake' wide open"],
        ['warn', "valve 'intake' refuses calls (shut for maintenance)"],
        ['log', "valve 'intake' lets calls through again; 5 refused over 400 ms"],
      ]);
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('gets its row in a health check through its own telemetry channel, beside the instances of that check', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      rateLimiter: { instances: { api: { registerHealthIndicator: true, limitForPeriod: 3 } } },
    });
    const valve = new Valve('api');
    const shedder = new LoadShedder(readLoadSheddingOptions({}), clock, () => 0.5);
    const health = new ResilienceHealthIndicator(new CatalogOf(registry, observed(valve)), shedder);
    health.onApplicationBootstrap();
    const limiter = { status: 'UP', availablePermissions: 3, numberOfWaitingThreads: 0 };
    expect(health.checkRateLimiters()).toEqual({
      rateLimiters: { status: 'up', instances: { api: { status: 'UP', opening: 100 }, 'api#2': limiter } },
    });
    valve.throttle(0, new Closed('closed'));
    expect(health.checkRateLimiters('throttles')).toEqual({
      throttles: { status: 'down', instances: { api: { status: 'DOWN', opening: 0 }, 'api#2': limiter } },
    });
    expect(health.check()).toEqual({ circuitBreakers: { status: 'up', instances: {} } });
    health.onModuleDestroy();
  });
});
