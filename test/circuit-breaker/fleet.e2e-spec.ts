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

/** {@link eventually}, for a check that asks Redis. */
async function eventuallyAsync(what: string, check: () => Promise<boolean>, withinMs = 1000): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
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

  /** A replica's registry: its own Redis connection, the `circuitBreaker` section given. */
  function replicaRegistry(circuitBreaker: object): ResilienceRegistry {
    const client = new Redis(url as string, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const registry = new ResilienceRegistry({
      clock,
      circuitBreakerStore: new RedisCircuitBreakerStore({ client, prefix }),
      circuitBreaker,
    });
    registries.push(registry);
    return registry;
  }

  /** A replica: its own registry and Redis connection, the breaker `pay` shared with `shared`. */
  async function replica(
    shared: boolean | { quorum: number } = true,
    extra: object = {},
  ): Promise<CircuitBreakerPolicy> {
    const registry = replicaRegistry({ instances: { pay: { ...BREAKER, ...extra, shared } } });
    const breaker = registry.circuitBreaker('pay');
    await registry.fleetJoined();
    return breaker;
  }

  /** `count` replicas whose `pay` is shared with `shared`, their other `circuitBreaker` options `section`: their registries, to ask for keys. */
  async function keyedReplicas(
    count: number,
    shared: boolean | { quorum: number } = true,
    section: object = {},
  ): Promise<ResilienceRegistry[]> {
    const made = Array.from({ length: count }, () =>
      replicaRegistry({ ...section, instances: { pay: { ...BREAKER, shared } } }),
    );
    await Promise.all(made.map((registry) => registry.fleetJoined()));
    return made;
  }

  /** The breaker of `key` of `pay` on `registry`, asked for as calls ask for it. */
  const hostOn = (registry: ResilienceRegistry, key: string): CircuitBreakerPolicy =>
    registry.circuitBreaker('pay', { key });

  /** Makes `keys` on every one of `fleet` and waits until each has read its fleet's state. */
  async function makeKeys(fleet: readonly ResilienceRegistry[], ...keys: string[]): Promise<void> {
    for (const registry of fleet) for (const key of keys) hostOn(registry, key);
    await Promise.all(fleet.map((registry) => registry.fleetJoined()));
  }

  /** A connection of the test's own, to read what the store keeps in Redis. */
  function inspector(): Redis {
    const client = new Redis(url as string, { maxRetriesPerRequest: 1 });
    clients.push(client);
    return client;
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

  describe('breakers per key of a shared name', () => {
    it('opens a key on every replica once quorum replicas report that key; its other keys and the name stay CLOSED', async () => {
      const [a, b, c] = await keyedReplicas(3, { quorum: 2 });
      await makeKeys([a, b, c], 'h1.example', 'h2.example');
      await failUntilOpen(hostOn(a, 'h1.example'));
      await failUntilOpen(hostOn(b, 'h2.example'));
      await quietFor(300);
      // One report for each key: reports of different keys never add up to a quorum.
      expect([hostOn(c, 'h1.example').state, hostOn(c, 'h2.example').state]).toEqual(['CLOSED', 'CLOSED']);
      await failUntilOpen(hostOn(b, 'h1.example'));
      const took = await eventually('h1 OPEN on c', () => hostOn(c, 'h1.example').state === 'OPEN');
      expect(took).toBeLessThan(1000);
      expect(hostOn(c, 'h1.example').notPermittedError().retryAfterMs).toBeGreaterThan(9000);
      await quietFor(200);
      expect(
        [hostOn(a, 'h2.example'), hostOn(c, 'h2.example'), a.circuitBreaker('pay'), c.circuitBreaker('pay')].map(
          (breaker) => breaker.state,
        ),
      ).toEqual(['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED']);
    });

    it('a transition by hand of one key reaches that key on every replica, and nothing else', async () => {
      const [a, b] = await keyedReplicas(2);
      await makeKeys([a, b], 'h1.example', 'h2.example');
      hostOn(a, 'h1.example').transitionToForcedOpenState();
      const took = await eventually('h1 FORCED_OPEN on b', () => hostOn(b, 'h1.example').state === 'FORCED_OPEN');
      expect(took).toBeLessThan(1000);
      await quietFor(200);
      expect([hostOn(b, 'h2.example').state, b.circuitBreaker('pay').state]).toEqual(['CLOSED', 'CLOSED']);
      const resets: string[] = [];
      hostOn(a, 'h1.example').onReset(({ key }) => void resets.push(String(key)));
      hostOn(b, 'h1.example').reset();
      await eventually('h1 CLOSED on a by the reset', () => hostOn(a, 'h1.example').state === 'CLOSED');
      expect(resets).toEqual(['h1.example']);
    });

    it("after the wait one replica per key holds the probe lease; each key's verdict moves that key everywhere", async () => {
      const fleet = await keyedReplicas(3);
      const keys = ['h1.example', 'h2.example'];
      await makeKeys(fleet, ...keys);
      for (const key of keys) await failUntilOpen(hostOn(fleet[0], key));
      await eventually('both keys OPEN everywhere', () =>
        fleet.every((r) => keys.every((key) => hostOn(r, key).state === 'OPEN')),
      );
      await clock.advance(10_001);
      for (const r of fleet)
        for (const key of keys)
          expect(
            await hostOn(r, key)
              .execute(ok)
              .catch((e: unknown) => e),
          ).toBeInstanceOf(CallNotPermittedError);
      await eventually('a prober for each key', () =>
        keys.every((key) => fleet.some((r) => hostOn(r, key).state === 'HALF_OPEN')),
      );
      await quietFor(100);
      const probers = keys.map((key) => fleet.filter((r) => hostOn(r, key).state === 'HALF_OPEN'));
      expect(probers.map((p) => p.length)).toEqual([1, 1]);
      expect(await hostOn(probers[0][0], 'h1.example').execute(ok)).toBe('ok');
      await hostOn(probers[1][0], 'h2.example')
        .execute(boom)
        .catch(() => undefined);
      await eventually('h1 CLOSED everywhere, h2 reopened everywhere for a new wait', () =>
        fleet.every(
          (r) =>
            hostOn(r, 'h1.example').state === 'CLOSED' &&
            hostOn(r, 'h2.example').state === 'OPEN' &&
            (hostOn(r, 'h2.example').notPermittedError().retryAfterMs ?? 0) > 9000,
        ),
      );
    });

    it('a key made on a replica after the fleet opened it starts OPEN for what is left of the wait', async () => {
      const [a, b] = await keyedReplicas(2);
      await makeKeys([a], 'h1.example');
      await failUntilOpen(hostOn(a, 'h1.example'));
      await quietFor(100);
      const late = hostOn(b, 'h1.example');
      const other = hostOn(b, 'h2.example');
      await b.fleetJoined();
      expect([late.state, other.state]).toEqual(['OPEN', 'CLOSED']);
      expect(late.notPermittedError().retryAfterMs).toBeGreaterThan(9000);
    });

    it('an evicted key leaves its fleet: it gives back the probe lease it was taking and follows nothing more', async () => {
      const [a, b] = await keyedReplicas(2, true, { keys: { max: 1 } });
      await makeKeys([a, b], 'h1.example');
      const evicted: string[] = [];
      b.onInstanceEvicted(({ name, key }) => void evicted.push(`${name} ${key}`));
      const onA = hostOn(a, 'h1.example');
      const onB = hostOn(b, 'h1.example');
      await failUntilOpen(onA);
      await eventually('h1 OPEN on b', () => onB.state === 'OPEN');
      await clock.advance(10_001);
      // b's call asks the fleet for the probe lease; before the answer, a new key takes h1's place (its OPEN is over).
      const refused = onB.execute(ok).catch((e: unknown) => e);
      hostOn(b, 'h2.example');
      expect(await refused).toBeInstanceOf(CallNotPermittedError);
      expect(evicted).toEqual(['pay h1.example']);
      // The claim is answered and the lease given back (kept, it would last the 10 s wait).
      await quietFor(300);
      expect(await inspector().exists(`${prefix}{pay|h1.example}:key:probe`)).toBe(0);
      expect(onB.state).toBe('OPEN');
      // So a takes it at once and its verdict closes the fleet; the evicted breaker hears none of it.
      expect(await onA.execute(ok).catch((e: unknown) => e)).toBeInstanceOf(CallNotPermittedError);
      await eventually('a probing', () => onA.state === 'HALF_OPEN');
      expect(await onA.execute(ok)).toBe('ok');
      onA.transitionToForcedOpenState();
      await quietFor(300);
      expect(onB.state).toBe('OPEN');
      const again = hostOn(b, 'h1.example');
      await b.fleetJoined();
      expect(again).not.toBe(onB);
      expect(again.state).toBe('FORCED_OPEN');
    });

    it('keeps keys holding colons, braces, a bar or nothing apart from each other and from names', async () => {
      const instances = { pay: { ...BREAKER, shared: true }, 'pay|x': { ...BREAKER, shared: true } };
      const [a, b] = [replicaRegistry({ instances }), replicaRegistry({ instances })];
      type Subject = readonly [string, string | undefined];
      const subjects: Subject[] = [
        ['pay', 'x:1'],
        ['pay', '{x}'],
        ['pay', 'x}'],
        ['pay', 'x'],
        ['pay', ''],
        ['pay|x', undefined],
        ['pay', undefined],
      ];
      const on = (r: ResilienceRegistry, [name, key]: Subject): CircuitBreakerPolicy =>
        key === undefined ? r.circuitBreaker(name) : r.circuitBreaker(name, { key });
      for (const subject of subjects) for (const r of [a, b]) on(r, subject);
      await Promise.all([a.fleetJoined(), b.fleetJoined()]);
      on(a, subjects[0]).transitionToForcedOpenState();
      on(a, subjects[1]).transitionToDisabledState();
      on(a, subjects[2]).transitionToMetricsOnlyState();
      on(a, subjects[5]).transitionToForcedOpenState();
      await eventually('b follows the four', () => on(b, subjects[5]).state === 'FORCED_OPEN');
      await quietFor(300);
      expect(subjects.map((s) => `${s[0]} ${String(s[1])} ${on(b, s).state}`)).toEqual([
        'pay x:1 FORCED_OPEN',
        'pay {x} DISABLED',
        'pay x} METRICS_ONLY',
        'pay x CLOSED',
        'pay  CLOSED',
        'pay|x undefined FORCED_OPEN',
        'pay undefined CLOSED',
      ]);
      const stored = (await inspector().keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).sort();
      expect(stored).toEqual([
        '{pay|%7Bx%7D}:key:state',
        '{pay|x%3A1}:key:state',
        '{pay|x%7D}:key:state',
        '{pay|x}:state',
      ]);
    });

    it('names the state of a long key in Redis by its digest: bounded key names, and the key still moves every replica', async () => {
      const [a, b] = await keyedReplicas(2);
      // A whole URL as a key, query string and all: 4,000 characters, 11,000 once escaped.
      const long = `https://api.example.com/search?q=${'é&'.repeat(1_980)}`;
      const longer = `${long}x`;
      await makeKeys([a, b], long, longer);
      hostOn(a, long).transitionToForcedOpenState();
      hostOn(a, longer).transitionToDisabledState();
      await eventually('b follows both keys', () => hostOn(b, longer).state === 'DISABLED');
      expect([hostOn(b, long).state, hostOn(b, longer).state]).toEqual(['FORCED_OPEN', 'DISABLED']);
      const stored = (await inspector().keys(`${prefix}*`)).map((k) => k.slice(prefix.length));
      expect(stored).toHaveLength(2);
      for (const name of stored) expect(name).toMatch(/^\{pay\|#[0-9a-f]{64}\}:key:state$/);
      expect(new Set(stored).size).toBe(2);
    });

    it("expires a key's state in Redis: 2 × its OPEN wait + 1 min after its last transition, never while set by hand", async () => {
      const [a] = await keyedReplicas(1, { quorum: 2 });
      const redis = inspector();
      await makeKeys([a], 'h1.example');
      const key = `${prefix}{pay|h1.example}:key:`;
      await failUntilOpen(hostOn(a, 'h1.example'));
      await eventuallyAsync('the report stored', async () => (await redis.exists(`${key}reports`)) === 1);
      // Below the quorum: only the report is kept, for its wait.
      expect(await redis.exists(`${key}state`)).toBe(0);
      expect(await redis.pttl(`${key}reports`)).toBeGreaterThan(9000);
      expect(await redis.pttl(`${key}reports`)).toBeLessThanOrEqual(10_000);
      hostOn(a, 'h1.example').transitionToOpenState();
      await eventuallyAsync('OPEN stored', async () => (await redis.hget(`${key}state`, 'state')) === 'OPEN');
      expect(await redis.pttl(`${key}state`)).toBeGreaterThan(2 * 10_000 + 60_000 - 5000);
      expect(await redis.pttl(`${key}state`)).toBeLessThanOrEqual(2 * 10_000 + 60_000);
      hostOn(a, 'h1.example').transitionToForcedOpenState();
      await eventuallyAsync('FORCED_OPEN kept', async () => (await redis.pttl(`${key}state`)) === -1);
      hostOn(a, 'h1.example').transitionToClosedState();
      await eventuallyAsync('CLOSED stored', async () => (await redis.hget(`${key}state`, 'state')) === 'CLOSED');
      expect(await redis.pttl(`${key}state`)).toBeGreaterThan(55_000);
      expect(await redis.pttl(`${key}state`)).toBeLessThanOrEqual(60_000);
      // A name's state is one hash per name: it is kept.
      a.circuitBreaker('pay').transitionToClosedState();
      await eventuallyAsync('the name stored', async () => (await redis.exists(`${prefix}{pay}:state`)) === 1);
      expect(await redis.pttl(`${prefix}{pay}:state`)).toBe(-1);
    });

    it('a key whose state expired in Redis still moves every replica at its next transition', async () => {
      const [a, b] = await keyedReplicas(2);
      await makeKeys([a, b], 'h1.example');
      hostOn(a, 'h1.example').transitionToForcedOpenState();
      await eventually('b FORCED_OPEN', () => hostOn(b, 'h1.example').state === 'FORCED_OPEN');
      hostOn(a, 'h1.example').transitionToClosedState();
      await eventually('b CLOSED', () => hostOn(b, 'h1.example').state === 'CLOSED');
      // As its expiry would.
      await inspector().del(`${prefix}{pay|h1.example}:key:state`);
      hostOn(a, 'h1.example').transitionToDisabledState();
      await eventually('b DISABLED', () => hostOn(b, 'h1.example').state === 'DISABLED');
    });

    it('a healthy call through a kept key sends Redis nothing, through the getter or a keyed pipeline', async () => {
      const [a] = await keyedReplicas(1);
      const perHost = a.pipeline('pay', { key: (host: string) => host });
      await makeKeys([a], 'h1.example', 'h2.example');
      const monitor = inspector();
      const seen: string[] = [];
      const monitoring = await monitor.monitor();
      monitoring.on('monitor', (_time: string, args: string[]) => void seen.push(args.join(' ')));
      await quietFor(100);
      seen.length = 0;
      for (let i = 0; i < 1000; i++) {
        const host = i % 2 === 0 ? 'h1.example' : 'h2.example';
        expect(await hostOn(a, host).execute(ok)).toBe('ok');
        expect(await perHost.execute(() => ok(), { args: [host] })).toBe('ok');
      }
      await quietFor(200);
      expect(seen).toEqual([]);
      monitoring.disconnect();
    });
  });

  it('an evicted undeclared name leaves its fleet: it follows nothing more', async () => {
    const section = { configs: { default: { ...BREAKER, shared: true } } };
    const a = replicaRegistry(section);
    const client = new Redis(url, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const b = new ResilienceRegistry({
      clock,
      maxUndeclaredInstances: 1,
      circuitBreakerStore: new RedisCircuitBreakerStore({ client, prefix }),
      circuitBreaker: section,
    });
    registries.push(b);
    const [onA, onB] = [a.circuitBreaker('ship'), b.circuitBreaker('ship')];
    await Promise.all([a.fleetJoined(), b.fleetJoined()]);
    b.circuitBreaker('stock');
    expect(b.all('circuitBreaker')).not.toContain(onB);
    onA.transitionToForcedOpenState();
    await quietFor(300);
    expect(onB.state).toBe('CLOSED');
    const again = b.circuitBreaker('ship');
    await b.fleetJoined();
    expect(again.state).toBe('FORCED_OPEN');
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
      // A key made while the store is down runs as a local breaker too.
      const hostOnA = registries[0].circuitBreaker('pay', { key: 'h1.example' });
      await failUntilOpen(hostOnA);
      expect(logs[0]).toEqual([expect.stringContaining('circuit breaker store is unreachable')]);
      redis = await startRedis(root, { port });
      await eventually('a rejoined', () => logs[0].length === 2, 5000);
      expect(logs[0][1]).toContain('reachable again; 2 fleet-wide circuit breaker(s) rejoined');
      const b = replica();
      const hostOnB = registries[1].circuitBreaker('pay', { key: 'h1.example' });
      await registries[1].fleetJoined();
      b.transitionToForcedOpenState();
      await eventually('a FORCED_OPEN', () => a.state === 'FORCED_OPEN');
      hostOnB.transitionToDisabledState();
      await eventually("a's key DISABLED", () => hostOnA.state === 'DISABLED');
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
