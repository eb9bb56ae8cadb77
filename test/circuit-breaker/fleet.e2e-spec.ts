import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CanActivate } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import {
  CallNotPermittedError,
  CircuitBreakerPolicy,
  fromSpringConfig,
  ResilienceEndpointsModule,
  ResilienceModule,
  ResilienceRegistry,
  VirtualClock,
} from '../../lib';
import { SHARED_NOT_LIVE, SHARED_WITHOUT_STORE } from '../../lib/policies/circuit-breaker/circuit-breaker.messages';
import { RedisCircuitBreakerStore } from '../../lib/stores/redis-circuit-breaker-store';
import { RunningServer } from '../support/postgres-server';
import { startRedis } from '../support/redis-server';
import { serverOrSkip } from '../support/server-env';
import { freePort } from '../support/wait';

/** Lets every operator request through (the test's app has no users). */
class Operator implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

/** Failures in a row that open the breaker: a window of 4, all failed. */
const BREAKER = {
  slidingWindowSize: 4,
  minimumNumberOfCalls: 4,
  failureRateThreshold: 100,
  waitDurationInOpenState: '10s',
  permittedNumberOfCallsInHalfOpenState: 1,
};

const boom = (): Promise<never> => Promise.reject(new Error('dependency down'));
const ok = (): Promise<string> => Promise.resolve('ok');

/** Waits in real time (polling, bounded by `withinMs`) until `check` holds; fails naming what did not happen. */
async function eventually(what: string, check: () => boolean, withinMs = 1000): Promise<number> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > withinMs) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return Date.now() - start;
}

/** Lets the store's answers and messages arrive, in real time, when nothing should change. */
const quietFor = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function failUntilOpen(breaker: CircuitBreakerPolicy): Promise<void> {
  for (let i = 0; i < BREAKER.minimumNumberOfCalls; i++) await breaker.execute(boom).catch(() => undefined);
  expect(breaker.state).toBe('OPEN');
}

describe('fleet-wide circuit breaker (real Redis)', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;
  const clients: Redis[] = [];
  const registries: ResilienceRegistry[] = [];
  let prefix: string;
  let clock: VirtualClock;

  beforeEach(() => {
    prefix = `cb-fleet:${randomUUID()}:`;
    clock = new VirtualClock(1_000_000);
  });
  afterEach(async () => {
    for (const registry of registries.splice(0)) registry.dispose();
    await Promise.all(clients.splice(0).map((c) => c.quit()));
  });

  /** A replica: its own registry and Redis connection, the breaker `pay` shared with `shared`. */
  async function replica(
    shared: boolean | { quorum: number } = true,
    extra: object = {},
  ): Promise<CircuitBreakerPolicy> {
    const client = new Redis(url as string, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const registry = new ResilienceRegistry({
      clock,
      circuitBreakerStore: new RedisCircuitBreakerStore({ client, prefix }),
      circuitBreaker: { instances: { pay: { ...BREAKER, ...extra, shared } } },
    });
    registries.push(registry);
    const breaker = registry.circuitBreaker('pay');
    await registry.fleetJoined();
    return breaker;
  }

  it('quorum 1: one replica opening opens every replica within a second, for the same wait', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    await failUntilOpen(a);
    const took = await eventually('b and c OPEN', () => b.state === 'OPEN' && c.state === 'OPEN');
    expect(took).toBeLessThan(1000);
    const refusal = (await b.execute(ok).catch((e: unknown) => e)) as CallNotPermittedError;
    expect(refusal).toBeInstanceOf(CallNotPermittedError);
    expect(refusal.retryAfterMs).toBeGreaterThan(9000);
    expect(refusal.retryAfterMs).toBeLessThanOrEqual(10_000);
    expect(b.openWaitMs).toBe(refusal.retryAfterMs);
  });

  it('quorum 3: one or two replicas opening leave the others closed; the third report opens the fleet', async () => {
    const [a, b, c, d] = [
      await replica({ quorum: 3 }),
      await replica({ quorum: 3 }),
      await replica({ quorum: 3 }),
      await replica({ quorum: 3 }),
    ];
    await failUntilOpen(a);
    await failUntilOpen(b);
    await quietFor(300);
    expect([c.state, d.state]).toEqual(['CLOSED', 'CLOSED']);
    expect(await d.execute(ok)).toBe('ok');
    await failUntilOpen(c);
    await eventually('d OPEN', () => d.state === 'OPEN');
  });

  it('a replica opening alone below the quorum probes and closes on its own, without the fleet', async () => {
    const [a, b] = [await replica({ quorum: 2 }), await replica({ quorum: 2 })];
    await failUntilOpen(a);
    await clock.advance(10_001);
    expect(await a.execute(ok)).toBe('ok');
    expect(a.state).toBe('CLOSED');
    expect(b.state).toBe('CLOSED');
  });

  it('after the wait one replica holds the probe lease; the others refuse until its verdict closes them all', async () => {
    const fleet = [await replica(), await replica(), await replica()];
    await failUntilOpen(fleet[0]);
    await eventually('all OPEN', () => fleet.every((b) => b.state === 'OPEN'));
    await clock.advance(10_001);
    // Each replica's first call after the wait asks for the lease and is refused meanwhile.
    for (const b of fleet) expect(await b.execute(ok).catch((e: unknown) => e)).toBeInstanceOf(CallNotPermittedError);
    await eventually('one replica HALF_OPEN', () => fleet.some((b) => b.state === 'HALF_OPEN'));
    await quietFor(100);
    const probers = fleet.filter((b) => b.state === 'HALF_OPEN');
    expect(probers).toHaveLength(1);
    const others = fleet.filter((b) => b !== probers[0]);
    for (const b of others) {
      expect(b.state).toBe('OPEN');
      expect(await b.execute(ok).catch((e: unknown) => e)).toBeInstanceOf(CallNotPermittedError);
    }
    expect(await probers[0].execute(ok)).toBe('ok');
    expect(probers[0].state).toBe('CLOSED');
    await eventually('every replica CLOSED', () => fleet.every((b) => b.state === 'CLOSED'));
  });

  it('a failed probe reopens every replica for a new wait', async () => {
    const fleet = [await replica(), await replica()];
    await failUntilOpen(fleet[0]);
    await eventually('all OPEN', () => fleet.every((b) => b.state === 'OPEN'));
    await clock.advance(10_001);
    for (const b of fleet) await b.execute(ok).catch(() => undefined);
    await eventually('a prober', () => fleet.some((b) => b.state === 'HALF_OPEN'));
    const prober = fleet.find((b) => b.state === 'HALF_OPEN') as CircuitBreakerPolicy;
    const other = fleet.find((b) => b !== prober) as CircuitBreakerPolicy;
    await prober.execute(boom).catch(() => undefined);
    expect(prober.state).toBe('OPEN');
    const opened = clock.now();
    await eventually('the other replica reopened for a new wait', () => {
      const refusal = other.notPermittedError();
      return (refusal.retryAfterMs ?? 0) > 9000;
    });
    expect(other.state).toBe('OPEN');
    expect(clock.now()).toBe(opened);
  });

  it('manual transitions and reset reach every replica', async () => {
    const [a, b] = [await replica(), await replica()];
    const resets: string[] = [];
    b.onReset(({ name }) => void resets.push(name));
    a.transitionToForcedOpenState();
    await eventually('b FORCED_OPEN', () => b.state === 'FORCED_OPEN');
    b.transitionToDisabledState();
    await eventually('a DISABLED', () => a.state === 'DISABLED');
    a.transitionToMetricsOnlyState();
    await eventually('b METRICS_ONLY', () => b.state === 'METRICS_ONLY');
    a.reset();
    await eventually('b CLOSED by a reset', () => b.state === 'CLOSED' && resets.length === 1);
  });

  it("the actuator's POST on one replica's application reaches the other replicas", async () => {
    const client = new Redis(url, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          circuitBreakerStore: new RedisCircuitBreakerStore({ client, prefix }),
          circuitBreaker: { instances: { pay: { ...BREAKER, shared: true } } },
        }),
        ResilienceEndpointsModule.forRoot({ status: { public: true, writable: { guards: [Operator] } } }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      await app.get(ResilienceRegistry).fleetJoined();
      const other = await replica();
      await request(app.getHttpServer())
        .post('/actuator/circuitbreakers/pay')
        .send({ updateState: 'FORCE_OPEN' })
        .expect(200);
      await eventually('the other replica FORCED_OPEN', () => other.state === 'FORCED_OPEN');
      await request(app.getHttpServer())
        .post('/actuator/circuitbreakers/pay')
        .send({ updateState: 'CLOSE' })
        .expect(200);
      await eventually('the other replica CLOSED', () => other.state === 'CLOSED');
    } finally {
      await app.close();
    }
  });

  it('a replica that starts while the fleet is OPEN starts OPEN for what is left of the wait', async () => {
    const a = await replica();
    await failUntilOpen(a);
    await quietFor(100);
    const late = await replica();
    expect(late.state).toBe('OPEN');
    expect(late.notPermittedError().retryAfterMs).toBeGreaterThan(9000);
  });

  it('a healthy call on a shared breaker sends Redis nothing', async () => {
    const a = await replica();
    const monitor = new Redis(url, { maxRetriesPerRequest: 1 });
    clients.push(monitor);
    const seen: string[] = [];
    const monitoring = await monitor.monitor();
    monitoring.on('monitor', (_time: string, args: string[]) => void seen.push(args.join(' ')));
    await quietFor(100);
    seen.length = 0;
    for (let i = 0; i < 1000; i++) await a.execute(ok);
    await quietFor(200);
    expect(seen).toEqual([]);
    monitoring.disconnect();
  });

  it("keeps a shared name's per-key breakers local: a key that opens on one replica stays closed on the others", async () => {
    const a = await replica();
    const b = await replica();
    const [ra, rb] = registries;
    const hostOnA = ra.circuitBreaker('pay', { key: 'h1.example' });
    const hostOnB = rb.circuitBreaker('pay', { key: 'h1.example' });
    await failUntilOpen(hostOnA);
    await quietFor(200);
    expect([hostOnB.state, a.state, b.state]).toEqual(['CLOSED', 'CLOSED', 'CLOSED']);
  });

  it('refuses to take a running breaker out of its fleet, or change its quorum, live: that needs a restart', async () => {
    const a = await replica({ quorum: 2 });
    const registry = registries[0];
    const place = "circuitBreaker instance 'pay'";
    expect(() => registry.reconfigure('circuitBreaker', 'pay', { shared: false })).toThrow(
      SHARED_NOT_LIVE(place, '{ quorum: 2 }', 'false'),
    );
    expect(() =>
      registry.reconfigure('circuitBreaker', 'pay', { shared: { quorum: 1 }, slidingWindowSize: 8 }),
    ).toThrow(SHARED_NOT_LIVE(place, '{ quorum: 2 }', '{ quorum: 1 }'));
    expect([a.config.shared, a.config.slidingWindowSize]).toEqual([{ quorum: 2 }, 4]);
    // Other settings of a fleet-wide breaker still change live, and it stays in its fleet.
    registry.reconfigure('circuitBreaker', 'pay', { waitDurationInOpenState: '20s' });
    const b = await replica({ quorum: 2 });
    await failUntilOpen(a);
    await failUntilOpen(b);
    const c = await replica({ quorum: 2 });
    await eventually('c OPEN', () => c.state === 'OPEN');
  });
});

describe('fleet-wide circuit breaker whose Redis is down at startup', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;

  it('runs the breaker locally, logs once, and joins its fleet when Redis comes up', async () => {
    const root = await mkdtemp(join(tmpdir(), 'fleet-startup-'));
    const port = await freePort();
    const clock = new VirtualClock();
    const clients: Redis[] = [];
    const registries: ResilienceRegistry[] = [];
    const logs: string[][] = [];
    const replica = (): CircuitBreakerPolicy => {
      const client = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
      client.on('error', () => undefined);
      clients.push(client);
      const lines: string[] = [];
      logs.push(lines);
      const registry = new ResilienceRegistry(
        {
          clock,
          circuitBreakerStore: new RedisCircuitBreakerStore({ client, prefix: 'startup:' }),
          circuitBreaker: { instances: { pay: { ...BREAKER, shared: true } } },
        },
        (line) => void lines.push(line),
      );
      registries.push(registry);
      return registry.circuitBreaker('pay');
    };
    let redis: RunningServer | undefined;
    try {
      const a = replica();
      await eventually('the outage logged', () => logs[0].length > 0);
      expect(await a.execute(ok)).toBe('ok');
      await failUntilOpen(a);
      expect(logs[0]).toEqual([expect.stringContaining('circuit breaker store is unreachable')]);
      redis = await startRedis(root, { port });
      await eventually('a rejoined', () => logs[0].length === 2, 5000);
      expect(logs[0][1]).toContain('reachable again; 1 fleet-wide circuit breaker(s) rejoined');
      const b = replica();
      await registries[1].fleetJoined();
      b.transitionToForcedOpenState();
      await eventually('a FORCED_OPEN', () => a.state === 'FORCED_OPEN');
    } finally {
      for (const registry of registries) registry.dispose();
      await Promise.all(clients.map((c) => c.quit().catch(() => undefined)));
      await redis?.stop();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('fleet-wide circuit breaker options', () => {
  it('binds shared and shared.quorum from an application.yml, as Spring binds text', () => {
    const store = new RedisCircuitBreakerStore({ client: {} as never });
    const options = fromSpringConfig(
      'resilience4j.circuitbreaker.instances.pay.shared.quorum=3\nresilience4j.circuitbreaker.instances.ship.shared=true\n',
    );
    const registry = new ResilienceRegistry({ ...options, circuitBreakerStore: store });
    const sections = registry.options.sections.circuitBreaker.instances;
    expect(sections.get('pay')?.shared).toEqual({ quorum: 3 });
    expect(sections.get('ship')?.shared).toEqual({ quorum: 1 });
    expect(() => new ResilienceRegistry(options)).toThrow(SHARED_WITHOUT_STORE("circuitBreaker instance 'pay'"));
  });

  it('refuses shared: true without a circuitBreakerStore, naming the instance and the module option', () => {
    expect(() => new ResilienceRegistry({ circuitBreaker: { instances: { pay: { shared: true } } } })).toThrow(
      SHARED_WITHOUT_STORE("circuitBreaker instance 'pay'"),
    );
    expect(
      () => new ResilienceRegistry({ circuitBreaker: { configs: { default: { shared: { quorum: 2 } } } } }),
    ).toThrow(/key 'shared' is set, but the module option 'circuitBreakerStore' is not/);
  });

  it('refuses a quorum that is not a whole number of at least 1', () => {
    expect(() => new ResilienceRegistry({ circuitBreaker: { instances: { pay: { shared: { quorum: 0 } } } } })).toThrow(
      /pay.*shared\.quorum.*an integer >= 1.*0/,
    );
    expect(
      () => new ResilienceRegistry({ circuitBreaker: { instances: { pay: { shared: 'yes' } } } } as never),
    ).toThrow(/shared.*true, false or \{ quorum \}/);
  });
});
