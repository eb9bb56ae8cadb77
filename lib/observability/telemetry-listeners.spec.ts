import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { EventStream, Unsubscribe } from '../kernel/events';
import {
  errorText,
  EventTap,
  HealthReport,
  PolicyMetrics,
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
import { Registry } from 'prom-client';
import { attachCollectors } from './metric-family';
import { PolicySeries } from './policy-series';
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
  private current = 100;
  /** Subscribes to each throttled call. */
  readonly onThrottled = this.throttled.subscribe;

  constructor(
    readonly name: string,
    readonly key?: string,
  ) {}

  /** How far it is open now, in percent. */
  get opening(): number {
    return this.current;
  }

  /** A call was let through at `opening` percent, or refused with `error`. */
  throttle(opening: number, error?: unknown): void {
    this.current = opening;
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
  ({
    policy: 'valve',
    name: valve.name,
    instance: valve,
    derived: false,
    key: valve.key,
  }) as unknown as ObservedInstance;

/** The valve's Prometheus series, as a policy's folder describes them. */
const VALVE_METRICS: PolicyMetrics<Valve, { refused: number }, { refused: number }> = {
  policy: 'valve',
  start(valve, { into }) {
    const counts = { refused: 0 };
    into.push(valve.onThrottled(({ error }) => void (error !== undefined && counts.refused++)));
    return counts;
  },
  retire: {
    empty: () => ({ refused: 0 }),
    add(into, _valve, counts) {
      into.refused += counts.refused;
    },
  },
  series: [
    {
      family: { name: 'valve_opening_percent', type: 'gauge', help: 'How far the valve is open', combine: 'max' },
      live: (valve, _counts, out) => out.sample({ name: valve.name }, valve.opening),
    },
    {
      family: { name: 'valve_refused_total', type: 'counter', help: 'Calls the valve refused', combine: 'sum' },
      live: (valve, counts, out) => out.sample({ name: valve.name }, counts.refused),
      retired: (name, counts, out) => out.sample({ name }, counts.refused),
    },
  ],
};

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

  it('gets its Prometheus series through its own description: gauges, counters, key labels, and counts kept past eviction', async () => {
    const prom = new Registry();
    const series = new PolicySeries([VALVE_METRICS], {
      buckets: [0.1],
      perKey: true,
      perKeySeries: 1,
      keysOf: (policy) =>
        policy === 'valve'
          ? [
              { key: 'eu', uses: 3, instance: { name: 'intake' } },
              { key: 'us', uses: 1, instance: { name: 'intake' } },
            ]
          : [],
    });
    const detach = attachCollectors(prom, series.collectors(), [0.1]);
    const eu = new Valve('intake', 'eu');
    const us = new Valve('intake', 'us');
    series.bind(observed(eu));
    series.bind(observed(us));
    eu.throttle(0, new Closed('closed'));
    eu.throttle(0, new Closed('closed'));
    eu.throttle(30);
    us.throttle(0, new Closed('closed'));
    const lines = async (): Promise<string[]> => (await prom.metrics()).split('\n');
    expect(await lines()).toEqual(
      expect.arrayContaining([
        '# HELP valve_opening_percent How far the valve is open',
        'valve_opening_percent{name="intake"} 30',
        'valve_opening_percent{name="intake",key="eu"} 30',
        'valve_opening_percent{name="intake",key="other"} 0',
        'valve_refused_total{name="intake"} 3',
        'valve_refused_total{name="intake",key="eu"} 2',
        'valve_refused_total{name="intake",key="other"} 1',
      ]),
    );
    series.unbind(observed(us));
    us.throttle(0, new Closed('closed'));
    const after = await lines();
    expect(after).toEqual(
      expect.arrayContaining([
        'valve_opening_percent{name="intake"} 30',
        'valve_refused_total{name="intake"} 3',
        'valve_refused_total{name="intake",key="other"} 1',
      ]),
    );
    expect(after).not.toContain('valve_opening_percent{name="intake",key="other"} 0');
    series.close();
    detach();
    expect(prom.getMetricsAsArray()).toEqual([]);
  });
});
