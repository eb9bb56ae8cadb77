import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { RateLimitedError, ResilienceRegistry, VirtualClock } from '../../lib';
import {
  RateLimiterStore,
  RateLimiterStoreAnswer,
  RateLimiterStoreRelease,
  RateLimiterStoreRequest,
} from '../../lib/policies/rate-limiter/rate-limiter-store';
import { RedisRateLimiterStore } from '../../lib/stores/redis-rate-limiter-store';
import { RunningServer } from '../support/postgres-server';
import { startRedis } from '../support/redis-server';
import { serverOrSkip } from '../support/server-env';

/** Passes every call to `inner`, and lets a test wait (in real time, bounded) until the store has answered them all. */
class Pending implements RateLimiterStore {
  private pending = 0;
  releases = 0;
  constructor(private readonly inner: RedisRateLimiterStore) {}

  acquire(request: RateLimiterStoreRequest): Promise<RateLimiterStoreAnswer> {
    return this.track(this.inner.acquire(request));
  }

  release(request: RateLimiterStoreRelease): Promise<void> {
    this.releases++;
    return this.track(this.inner.release(request));
  }

  async answered(): Promise<void> {
    for (let i = 0; i < 2_500 && this.pending > 0; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    if (this.pending > 0) throw new Error('the store did not answer within 5 s');
    await VirtualClock.settle();
  }

  private track<T>(call: Promise<T>): Promise<T> {
    this.pending++;
    return call.finally(() => this.pending--);
  }
}

/** Resolves once Redis reports a client held by the pause, polling a bounded number of times. */
async function waitForBlockedClients(admin: Redis): Promise<void> {
  for (let i = 0; i < 5_000; i++) {
    if (/blocked_clients:[1-9]/.test(await admin.info('clients'))) return;
  }
  throw new Error('no client was held by CLIENT PAUSE');
}

describe('a shared rate limiter whose Redis stalls (CLIENT PAUSE, private real Redis)', () => {
  // CLIENT PAUSE holds every client of a server: this suite pauses a Redis of its own.
  if (serverOrSkip('redis') === undefined) return;

  let root: string;
  let server: RunningServer;
  let admin: Redis;
  let client: Redis;
  let prefix = 0;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-stalled-acquires-'));
    server = await startRedis(root);
    admin = new Redis(server.url);
    client = new Redis(server.url);
  });
  afterAll(async () => {
    await Promise.all([admin.quit(), client.quit()]);
    await server.stop();
    await rm(root, { recursive: true, force: true });
  });
  afterEach(() => admin.call('CLIENT', 'UNPAUSE'));

  /** A limit of 10 per minute, shared through the private Redis, on a virtual clock; the store given up after 500 ms. */
  const limiterWith = (failOpen: boolean) => {
    const clock = new VirtualClock(1_000_000);
    const store = new Pending(new RedisRateLimiterStore({ client, prefix: `stall-${++prefix}:`, clock }));
    const registry = new ResilienceRegistry({
      clock,
      rateLimiterStore: store,
      rateLimiter: {
        instances: {
          partner: {
            shared: true,
            limitForPeriod: 10,
            limitRefreshPeriod: '1m',
            timeoutDuration: 0,
            failOpen,
            storeTimeout: '500ms',
          },
        },
      },
    });
    return { clock, store, limiter: registry.rateLimiter('partner') };
  };

  /** Runs `n` calls through the limiter; resolves to how many ran. */
  const calls = async (limiter: ReturnType<typeof limiterWith>['limiter'], n: number): Promise<number> => {
    const outcomes = await Promise.all(
      Array.from({ length: n }, () =>
        limiter
          .execute(async () => true)
          .catch((error: unknown) => {
            if (error instanceof RateLimitedError) return false;
            throw error;
          }),
      ),
    );
    return outcomes.filter(Boolean).length;
  };

  /** 9 calls while Redis is paused, each given up after storeTimeout; then Redis resumes. Resolves to how many of the 9 ran. */
  const stall = async ({ clock, store, limiter }: ReturnType<typeof limiterWith>): Promise<number> => {
    await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    const during = calls(limiter, 9);
    await waitForBlockedClients(admin);
    await clock.advance(500);
    const ran = await during;
    await admin.call('CLIENT', 'UNPAUSE');
    // The 9 acquires queued in Redis run now; their late answers are handled before the next calls.
    await store.answered();
    return ran;
  };

  it('failing closed: acquires given up during the stall are not charged when they land; after it, the whole limit (10 of 12) is admitted', async () => {
    const stalled = limiterWith(false);
    expect(await stall(stalled)).toBe(0);
    expect(stalled.store.releases).toBe(9);
    expect(await calls(stalled.limiter, 12)).toBe(10);
  });

  it('failing open: the 9 calls let through during the stall are not charged again when their acquires land; after it, 10 of 12 are admitted', async () => {
    const stalled = limiterWith(true);
    expect(await stall(stalled)).toBe(9);
    expect(stalled.store.releases).toBe(9);
    expect(await calls(stalled.limiter, 12)).toBe(10);
  });

  it('an acquire answered in time is never given back', async () => {
    const { store, limiter } = limiterWith(false);
    expect(await calls(limiter, 12)).toBe(10);
    await store.answered();
    expect(store.releases).toBe(0);
  });

  it('the store gives permits back only within the period they were taken in, and never past limitForPeriod', async () => {
    const clock = new VirtualClock(1_000_000);
    const store = new RedisRateLimiterStore({ client, prefix: `stall-${++prefix}:`, clock });
    const request = { name: 'p', limitForPeriod: 10, limitRefreshPeriodMs: 60_000, timeoutMs: 0, drain: false };
    expect((await store.acquire({ ...request, permits: 4 })).availablePermissions).toBe(6);
    await store.release({ name: 'p', permits: 3, limitForPeriod: 10, limitRefreshPeriodMs: 60_000 });
    expect((await store.acquire({ ...request, permits: 1 })).availablePermissions).toBe(8);
    await store.release({ name: 'p', permits: 5, limitForPeriod: 10, limitRefreshPeriodMs: 60_000 });
    expect((await store.acquire({ ...request, permits: 1 })).availablePermissions).toBe(9);
    // Permits of a later period reserved in this one are not given back once that period has begun.
    expect((await store.acquire({ ...request, permits: 9 })).availablePermissions).toBe(0);
    expect((await store.acquire({ ...request, permits: 5, timeoutMs: 60_000 })).availablePermissions).toBe(-5);
    await clock.advance(60_000);
    await store.release({ name: 'p', permits: 5, limitForPeriod: 10, limitRefreshPeriodMs: 60_000 });
    expect((await store.acquire({ ...request, permits: 1 })).availablePermissions).toBe(4);
  });
});
