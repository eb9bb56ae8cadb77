import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import Redis from 'ioredis';
import { DeadlineExceededError, RateLimitedError, ResilienceRegistry, VirtualClock } from '../../lib';
import { contextStorage, ResilienceContext } from '../../lib/kernel/context';
import {
  RateLimiterStore,
  RateLimiterStoreAnswer,
  RateLimiterStoreRequest,
} from '../../lib/policies/rate-limiter/rate-limiter-store';
import { RedisRateLimiterStore } from '../../lib/stores/redis-rate-limiter-store';
import { serverOrSkip } from '../support/server-env';

const WORKER = join(__dirname, 'fixtures', 'shared-limit-worker.ts');

function message<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string } & T): void => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      resolve(m);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`worker exited (code ${code}) before '${type}'`)));
  });
}

/** Passes acquires to `inner`, and lets a test wait (in real time, bounded) until the store has answered them all. */
class PendingCount implements RateLimiterStore {
  private pending = 0;
  constructor(private readonly inner: RateLimiterStore) {}

  acquire(request: Parameters<RateLimiterStore['acquire']>[0]): Promise<RateLimiterStoreAnswer> {
    this.pending++;
    return this.inner.acquire(request).finally(() => this.pending--);
  }

  async answered(): Promise<void> {
    for (let i = 0; i < 500 && this.pending > 0; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    if (this.pending > 0) throw new Error('the store did not answer within 1 s');
    await VirtualClock.settle();
  }
}

/** A registry whose shared limiters keep their permits in `store`, on `clock`. */
function registryWith(store: RateLimiterStore, clock: VirtualClock, config: object): ResilienceRegistry {
  return new ResilienceRegistry({
    clock,
    rateLimiterStore: store,
    rateLimiter: { instances: { partner: { shared: true, ...config } } },
  });
}

/**
 * Resilience4j's `AtomicRateLimiter` step, in whole microseconds, as a
 * shared limiter must compute it: periods from the first acquire, refill
 * for the periods gone by, reserve when the wait fits the timeout.
 */
class AtomicRateLimiterModel {
  private origin: number | undefined;
  private cycle = 0;
  private permits = 0;

  step(request: RateLimiterStoreRequest, nowUs: number): RateLimiterStoreAnswer {
    const limit = request.limitForPeriod;
    const period = request.limitRefreshPeriodMs * 1000;
    if (this.origin === undefined || nowUs < this.origin) {
      this.origin = nowUs;
      this.cycle = 0;
      this.permits = limit;
    }
    const elapsed = nowUs - this.origin;
    const current = Math.floor(elapsed / period);
    if (current !== this.cycle) {
      this.permits = Math.min(this.permits + (current - this.cycle) * limit, limit);
      this.cycle = current;
    }
    const toNext = (current + 1) * period - elapsed;
    const wait =
      this.permits >= request.permits
        ? 0
        : Math.max(0, Math.ceil((request.permits - this.permits - limit) / limit)) * period + toNext;
    let reserved = false;
    let drained = 0;
    if (request.drain) {
      drained = Math.max(this.permits, 0);
      this.permits -= drained;
    } else if (wait <= request.timeoutMs * 1000) {
      reserved = true;
      this.permits -= request.permits;
    }
    return {
      reserved,
      waitMs: wait / 1000,
      availablePermissions: this.permits,
      nextPeriodInMs: toNext / 1000,
      drained,
    };
  }
}

describe('RedisRateLimiterStore (real Redis)', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;
  let client: Redis;

  beforeAll(() => {
    client = new Redis(url, { maxRetriesPerRequest: 1 });
  });
  afterAll(() => client.quit());

  const storeOn = (clock: VirtualClock): RedisRateLimiterStore =>
    new RedisRateLimiterStore({ client, prefix: `rl-test:${randomUUID()}:`, clock });

  it('two registries on one store share one limit per period, refilled when the next period starts', async () => {
    const clock = new VirtualClock(1_000_000);
    const store = storeOn(clock);
    const a = registryWith(store, clock, {
      limitForPeriod: 3,
      limitRefreshPeriod: '1s',
      timeoutDuration: 0,
    }).rateLimiter('partner');
    const b = registryWith(store, clock, {
      limitForPeriod: 3,
      limitRefreshPeriod: '1s',
      timeoutDuration: 0,
    }).rateLimiter('partner');
    const outcomes = await Promise.all([a, b, a, b, a, b].map((limiter) => limiter.acquirePermission()));
    expect(outcomes.filter(Boolean)).toHaveLength(3);
    const refused = await b.waitForPermission().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterMs).toBe(1000);
    expect(b.metrics.availablePermissions).toBe(0);
    await clock.advance(1000);
    expect(b.metrics.availablePermissions).toBe(3);
    expect(await a.acquirePermission()).toBe(true);
    expect(a.metrics.availablePermissions).toBe(2);
  });

  it('reserves a later period permit for a caller that can wait, and drains on request', async () => {
    const clock = new VirtualClock(5_000_000);
    const store = new PendingCount(storeOn(clock));
    const limiter = registryWith(store, clock, {
      limitForPeriod: 1,
      limitRefreshPeriod: '1s',
      timeoutDuration: '1s',
    }).rateLimiter('partner');
    expect(await limiter.acquirePermission()).toBe(true);
    let second: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (second = granted));
    await store.answered();
    expect(limiter.metrics).toEqual({ availablePermissions: -1, numberOfWaitingThreads: 1 });
    expect(await limiter.acquirePermission()).toBe(false);
    await clock.advance(1000);
    expect(second).toBe(true);
    await clock.advance(1000);
    const drained: number[] = [];
    limiter.onDrained((event) => drained.push(event.numberOfPermits));
    await limiter.drainPermissions();
    expect(drained).toEqual([1]);
    expect(limiter.metrics.availablePermissions).toBe(0);
    let third: boolean | undefined;
    void limiter.acquirePermission().then((granted) => (third = granted));
    await store.answered();
    await clock.advance(999);
    expect(third).toBeUndefined();
    await clock.advance(1);
    expect(third).toBe(true);
  });

  it('answers every acquire, reservation and drain as Resilience4j computes them (random sequences)', async () => {
    const step = fc.record({
      advanceUs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000_000 })),
      permits: fc.integer({ min: 1, max: 7 }),
      drain: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          limitForPeriod: fc.integer({ min: 1, max: 5 }),
          // Whole and fractional milliseconds, and periods far longer than a run.
          limitRefreshPeriodMs: fc.constantFrom(1, 250, 1000, 2.5, 0.0015, 86_400_000),
          timeoutMs: fc.constantFrom(0, 400, 1000, 5000),
        }),
        fc.array(step, { minLength: 1, maxLength: 25 }),
        async (config, steps) => {
          const clock = new VirtualClock(1_000_000);
          const store = storeOn(clock);
          const model = new AtomicRateLimiterModel();
          for (const { advanceUs, permits, drain } of steps) {
            await clock.advance(advanceUs / 1000);
            const request = { name: 'model', ...config, permits: drain ? 0 : permits, drain };
            const expected = model.step(request, Math.round(clock.now() * 1000));
            const answer = await store.acquire(request);
            expect(answer.reserved).toBe(expected.reserved);
            expect(answer.drained).toBe(expected.drained);
            expect(answer.availablePermissions).toBe(expected.availablePermissions);
            expect(answer.waitMs).toBeCloseTo(expected.waitMs, 9);
            expect(answer.nextPeriodInMs).toBeCloseTo(expected.nextPeriodInMs, 9);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps limits in the billions and periods of days exact', async () => {
    const clock = new VirtualClock(1_000_000);
    const store = storeOn(clock);
    const request = {
      name: 'large',
      permits: 1_000_000_000,
      limitForPeriod: 3_000_000_000,
      limitRefreshPeriodMs: 86_400_000,
      timeoutMs: 0,
      drain: false,
    };
    expect(await store.acquire(request)).toEqual({
      reserved: true,
      waitMs: 0,
      availablePermissions: 2_000_000_000,
      nextPeriodInMs: 86_400_000,
      drained: 0,
    });
    await clock.advance(0.001);
    expect(await store.acquire({ ...request, permits: 2_000_000_001 })).toEqual({
      reserved: false,
      waitMs: 86_399_999.999,
      availablePermissions: 2_000_000_000,
      nextPeriodInMs: 86_399_999.999,
      drained: 0,
    });
  });

  it('keys expire once idle past a period and the timeout (Redis frees them itself)', async () => {
    const store = new RedisRateLimiterStore({ client, prefix: `rl-test:${randomUUID()}:` });
    const answer = await store.acquire({
      name: 'ttl',
      permits: 1,
      limitForPeriod: 5,
      limitRefreshPeriodMs: 2000,
      timeoutMs: 0,
      drain: false,
    });
    expect(answer).toMatchObject({ reserved: true, waitMs: 0, availablePermissions: 4, drained: 0 });
    const ttl = await client.pttl(`${(store as unknown as { prefix: string }).prefix}ttl`);
    expect(ttl).toBeGreaterThan(2000);
    expect(ttl).toBeLessThanOrEqual(3000);
  });

  it('keeps a key at least until the last period holding its reserved permits has ended', async () => {
    const clock = new VirtualClock(1_000_000);
    const prefix = `rl-test:${randomUUID()}:`;
    const store = new RedisRateLimiterStore({ client, prefix, clock });
    const request = {
      name: 'reserved',
      permits: 1,
      limitForPeriod: 1,
      limitRefreshPeriodMs: 10_000,
      timeoutMs: 15_000,
      drain: false,
    };
    expect(await store.acquire(request)).toMatchObject({ reserved: true, waitMs: 0 });
    await clock.advance(5_000);
    expect(await store.acquire(request)).toMatchObject({ reserved: true, waitMs: 5_000 });
    expect(await store.acquire(request)).toMatchObject({ reserved: true, waitMs: 15_000 });
    // The third permit is in the period ending 25 s from now; past it the key would start full anyway.
    const ttl = await client.pttl(`${prefix}reserved`);
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(31_000);
  });

  it('two processes, each with its own application, sharing a limit of 10 per period admit exactly 10 of 50 calls', async () => {
    const prefix = `rl-shared:${randomUUID()}:`;
    const workers = [0, 1].map(() =>
      fork(WORKER, [], {
        execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
        env: { ...process.env, SHARED_REDIS_URL: url, SHARED_PREFIX: prefix, SHARED_LIMIT: '10' },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      }),
    );
    try {
      await Promise.all(workers.map((w) => message(w, 'ready')));
      const done = workers.map((w) => message<{ admitted: number; refused: number; other: string[] }>(w, 'done'));
      for (const w of workers) w.send({ type: 'go', calls: 25 });
      const results = await Promise.all(done);
      expect(results.flatMap((r) => r.other)).toEqual([]);
      expect(results.reduce((n, r) => n + r.admitted, 0)).toBe(10);
      expect(results.reduce((n, r) => n + r.refused, 0)).toBe(40);
    } finally {
      for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    }
  }, 180_000);
});

describe('a shared rate limiter whose store fails', () => {
  /** A store that never answers, or rejects. */
  class BrokenStore implements RateLimiterStore {
    calls = 0;
    constructor(private readonly mode: 'silent' | 'error') {}
    acquire(): Promise<RateLimiterStoreAnswer> {
      this.calls++;
      return this.mode === 'silent'
        ? new Promise(() => undefined)
        : Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    }
  }

  it('fails closed by default: RateLimitedError with a generic message, the store error as its cause, the method does not run', async () => {
    const clock = new VirtualClock();
    const limiter = registryWith(new BrokenStore('error'), clock, {}).rateLimiter('partner');
    let ran = false;
    const outcome = await limiter.execute(async () => (ran = true)).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(RateLimitedError);
    expect((outcome as Error).message).toBe(
      "RateLimiter 'partner' could not get an answer from its store and refused the call",
    );
    expect(((outcome as Error).cause as Error).message).toBe('connect ECONNREFUSED 127.0.0.1:1');
    expect(ran).toBe(false);
  });

  it('fails open when the instance says so: the call goes ahead', async () => {
    const clock = new VirtualClock();
    const limiter = registryWith(new BrokenStore('error'), clock, { failOpen: true }).rateLimiter('partner');
    await expect(limiter.execute(async () => 'ran')).resolves.toBe('ran');
  });

  it('a silent store is given up after storeTimeout (no hang)', async () => {
    const clock = new VirtualClock();
    const limiter = registryWith(new BrokenStore('silent'), clock, { storeTimeout: '200ms' }).rateLimiter('partner');
    let outcome: unknown;
    void limiter
      .execute(async () => 'ran')
      .then(
        (v) => (outcome = v),
        (e: unknown) => (outcome = e),
      );
    await clock.advance(199);
    expect(outcome).toBeUndefined();
    expect(limiter.metrics.numberOfWaitingThreads).toBe(1);
    await clock.advance(1);
    expect(outcome).toBeInstanceOf(RateLimitedError);
    expect(((outcome as Error).cause as Error).message).toBe('no answer within 200ms');
    expect(limiter.metrics.numberOfWaitingThreads).toBe(0);
  });

  it('a silent store never holds a call past the request deadline: DeadlineExceededError when the deadline comes first, even failing open', async () => {
    const clock = new VirtualClock();
    const limiter = registryWith(new BrokenStore('silent'), clock, { storeTimeout: '2s', failOpen: true }).rateLimiter(
      'partner',
    );
    let outcome: unknown;
    void contextStorage.run(new ResilienceContext(clock, clock.now() + 300), () =>
      limiter
        .execute(async () => 'ran')
        .then(
          (v) => (outcome = v),
          (e: unknown) => (outcome = e),
        ),
    );
    await clock.advance(300);
    expect(outcome).toBeInstanceOf(DeadlineExceededError);
  });

  it('Redis unreachable: a real ioredis client to a closed port fails closed at once', async () => {
    const dead = new Redis({
      host: '127.0.0.1',
      port: 1,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => undefined);
    try {
      const limiter = registryWith(new RedisRateLimiterStore({ client: dead }), new VirtualClock(), {}).rateLimiter(
        'partner',
      );
      await expect(limiter.execute(async () => 'ran')).rejects.toBeInstanceOf(RateLimitedError);
    } finally {
      dead.disconnect();
    }
  });
});
