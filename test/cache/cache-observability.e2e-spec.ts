import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { context, propagation, Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import request from 'supertest';
import {
  Cache,
  Fallback,
  ResilienceEndpointsModule,
  ResilienceHealthIndicator,
  ResilienceModule,
  RESILIENCE_SPAN_EVENTS,
  VirtualClock,
} from '../../lib';
import { parseScrape, valueOf } from '../observability/kit';

class Unavailable extends Error {}

@Injectable()
class Rates {
  down = false;
  calls = 0;

  @Cache('rates')
  async rate(currency: string): Promise<string> {
    this.calls++;
    if (this.down) throw new Unavailable('rates API down');
    return `${currency}:${this.calls}`;
  }

  /** The same, under a fallback: the fallback counts its calls, and the stale answers in its row. */
  @Fallback(Unavailable, 'unknown')
  @Cache('guarded')
  async guardedRate(currency: string): Promise<string> {
    if (this.down) throw new Unavailable('rates API down');
    return `${currency}:guarded`;
  }

  unknown(): string {
    return 'unknown';
  }
}

/**
 * `rate`: a miss, a hit, then two stale answers with the rates API down.
 * `guardedRate`: a miss, a stale answer, then a cold start its fallback answers.
 */
async function drive(clock: VirtualClock, rates: Rates): Promise<void> {
  await rates.rate('EUR');
  await rates.rate('EUR');
  await clock.advance(2_000);
  rates.down = true;
  await rates.rate('EUR');
  await rates.rate('EUR');
  rates.down = false;
  await rates.guardedRate('EUR');
  rates.down = true;
  await rates.guardedRate('EUR');
  await rates.guardedRate('GBP');
}

describe('a cache seen from outside: metrics, fallback share, /actuator, span events', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();
  let app: INestApplication;
  let clock: VirtualClock;
  let rates: Rates;
  const metrics = new Registry();

  beforeAll(async () => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
    clock = new VirtualClock();
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: { registry: metrics },
          tracing: true,
          health: { fallbackShare: { threshold: 50, window: '1m', minimumNumberOfCalls: 2 } },
          cache: { instances: { rates: { ttl: '1s', staleIfError: '1h' }, guarded: { staleIfError: '1h' } } },
        }),
        ResilienceEndpointsModule.forRoot({ metrics: true, status: { public: true } }),
      ],
      providers: [Rates],
    }).compile();
    moduleRef.useLogger(false);
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    rates = app.get(Rates);
    await trace
      .getTracer('test')
      .startActiveSpan('request', (span: Span) => drive(clock, rates).finally(() => span.end()));
  });

  afterAll(async () => {
    await app.close();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('counts every call by how it was answered', async () => {
    const samples = parseScrape((await request(app.getHttpServer()).get('/metrics').expect(200)).text);
    const value = (result: string): number =>
      valueOf(samples, 'resilience4nest_cache_calls_total', { name: 'rates', result });
    expect([value('hit'), value('miss'), value('stale'), value('coalesced')]).toEqual([1, 1, 2, 0]);
  });

  it('counts a stale answer under a fallback as a fallback answer of the method', async () => {
    const samples = parseScrape((await request(app.getHttpServer()).get('/metrics').expect(200)).text);
    const name = 'Rates.guardedRate';
    expect(valueOf(samples, 'resilience4nest_fallback_calls_total', { name, kind: 'stale' })).toBe(1);
    expect(valueOf(samples, 'resilience4nest_fallback_calls_total', { name, kind: 'Unavailable' })).toBe(1);
    expect(valueOf(samples, 'resilience4nest_fallback_guarded_calls_total', { name })).toBe(3);
  });

  it('counts stale answers in the fallback share, each call once, which takes the check down', () => {
    const check = app.get(ResilienceHealthIndicator).checkFallbacks();
    const data = Object.values(check)[0] as {
      status: string;
      calls: number;
      fallbacks: number;
      share: number;
      methods: Record<string, unknown>;
    };
    expect(data).toMatchObject({ status: 'down', calls: 7, fallbacks: 4 });
    expect(data.methods).toEqual({
      rates: { calls: 4, fallbacks: 2, share: 50 },
      'Rates.guardedRate': { calls: 3, fallbacks: 2, share: (2 * 100) / 3 },
      guarded: { calls: 0, fallbacks: 0, share: 0 },
    });
  });

  it('lists the cache instance on /actuator/caches with its settings and counters', async () => {
    const body = (await request(app.getHttpServer()).get('/actuator/caches').expect(200)).body as {
      caches: { name: string; config: Record<string, unknown>; metrics: Record<string, number> }[];
    };
    expect(body.caches).toHaveLength(2);
    expect(body.caches).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'rates',
          config: expect.objectContaining({ ttl: 1000, staleIfError: 3_600_000, store: 'memory', maxEntries: 1000 }),
          metrics: { hit: 1, miss: 1, stale: 2, coalesced: 0, inFlight: 0 },
        }),
      ]),
    );
  });

  it('records a span event for each hit and each stale answer, with its age', () => {
    const span = exporter.getFinishedSpans().find((s) => s.name === 'request');
    const events = (span?.events ?? [])
      .filter((e) => e.name.startsWith('resilience.cache'))
      .map((e) => ({ name: e.name, attributes: e.attributes }));
    const attributes = (result: string, ageMs: number) => ({
      'resilience.policy': 'cache',
      'resilience.instance': 'rates',
      'resilience.cache.result': result,
      'resilience.cache.age_ms': ageMs,
    });
    expect(events.slice(0, 3)).toEqual([
      { name: RESILIENCE_SPAN_EVENTS.cacheHit, attributes: attributes('hit', 0) },
      { name: RESILIENCE_SPAN_EVENTS.cacheStale, attributes: attributes('stale', 2_000) },
      { name: RESILIENCE_SPAN_EVENTS.cacheStale, attributes: attributes('stale', 2_000) },
    ]);
  });
});
