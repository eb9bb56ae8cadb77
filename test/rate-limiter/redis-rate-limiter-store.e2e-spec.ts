import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Redis from 'ioredis';
import { DeadlineExceededError, RateLimitedError, ResilienceRegistry, VirtualClock } from '../../lib';
import { contextStorage, ResilienceContext } from '../../lib/context';
import { RateLimiterStore, RateLimiterStoreAnswer } from '../../lib/rate-limiter/rate-limiter-store';
import { RedisRateLimiterStore } from '../../lib/rate-limiter/redis-rate-limiter-store';
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
  }, 60_000);
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

  it('fails closed by default: RateLimitedError carrying the store error, the method does not run', async () => {
    const clock = new VirtualClock();
    const limiter = registryWith(new BrokenStore('error'), clock, {}).rateLimiter('partner');
    let ran = false;
    const outcome = await limiter.execute(async () => (ran = true)).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(RateLimitedError);
    expect((outcome as Error).message).toMatch(
      /could not reach its store \(connect ECONNREFUSED 127\.0\.0\.1:1\) and fails closed/,
    );
    expect((outcome as Error).cause).toBeInstanceOf(Error);
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
    expect((outcome as Error).message).toMatch(/no answer within 200ms/);
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
