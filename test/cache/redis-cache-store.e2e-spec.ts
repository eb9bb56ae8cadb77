import Redis from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResilienceRegistry, VirtualClock } from '../../lib';
import { DEFAULT_CACHE_REDIS_PREFIX, RedisCacheStore } from '../../lib/stores/redis-cache-store';
import { RunningServer } from '../support/postgres-server';
import { startRedis } from '../support/redis-server';

class Unavailable extends Error {}

interface Rate {
  rate: number;
  fresh: boolean;
  ageMs: number;
}

/** One process of the shop: its registry with the rates cache on `client`, and the log it wrote. */
function processOf(clock: VirtualClock, client: Redis) {
  const logged: string[] = [];
  const registry = new ResilienceRegistry(
    {
      clock,
      cache: {
        instances: {
          rates: {
            ttl: '1m',
            staleIfError: '6h',
            store: new RedisCacheStore({ client, timeout: 2_000 }),
            mark: (r: Rate, { ageMs }) => ({ ...r, fresh: false, ageMs }),
          },
        },
      },
    },
    (m) => logged.push(m),
  );
  return { cache: registry.pipeline({ name: 'rates', cache: 'rates' }), logged };
}

describe('RedisCacheStore against a real Redis', () => {
  let root: string;
  let server: RunningServer;
  let client: Redis;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-cache-'));
    server = await startRedis(root);
    client = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    await new Promise((resolve) => client.once('ready', resolve));
  }, 60_000);

  afterAll(async () => {
    client.disconnect();
    await server.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('starts a new process warm: the last known good another process stored answers, marked', async () => {
    const clock = new VirtualClock(1_000);
    const first = processOf(clock, client);
    expect(await first.cache.execute(() => ({ rate: 1.17, fresh: true, ageMs: 0 }))).toEqual({
      rate: 1.17,
      fresh: true,
      ageMs: 0,
    });
    const ttl = await client.pttl(`${DEFAULT_CACHE_REDIS_PREFIX}rates:[]`);
    expect(ttl).toBeGreaterThan(6 * 3_600_000 - 5_000);
    expect(ttl).toBeLessThanOrEqual(6 * 3_600_000);
    await clock.advance(30_000);
    const next = processOf(clock, client);
    let called = 0;
    expect(await next.cache.execute(() => ({ rate: (called++, 9), fresh: true, ageMs: 0 }))).toEqual({
      rate: 1.17,
      fresh: true,
      ageMs: 0,
    });
    expect(called).toBe(0);
    await clock.advance(3_600_000);
    await expect(next.cache.execute(() => Promise.reject(new Unavailable('rates API down')))).resolves.toEqual({
      rate: 1.17,
      fresh: false,
      ageMs: 3_630_000,
    });
  });

  it('goes on without the store when Redis is down: a miss, its own error when the dependency is down too, one log line', async () => {
    const clock = new VirtualClock();
    const shop = processOf(clock, client);
    await shop.cache.execute(() => ({ rate: 1.2, fresh: true, ageMs: 0 }));
    await clock.advance(120_000);
    await server.stop();
    expect(await shop.cache.execute(() => ({ rate: 1.3, fresh: true, ageMs: 0 }))).toEqual({
      rate: 1.3,
      fresh: true,
      ageMs: 0,
    });
    const down = new Unavailable('rates API down');
    await expect(shop.cache.execute(() => Promise.reject(down))).rejects.toBe(down);
    await expect(shop.cache.execute(() => Promise.reject(down))).rejects.toBe(down);
    expect(shop.logged).toHaveLength(1);
    expect(shop.logged[0]).toMatch(/^resilience4nest: cache 'rates': its store failed \(/);
  });
});
