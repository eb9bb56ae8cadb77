import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Body, Controller, Get, Logger, Post } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import { Pool } from 'pg';
import {
  Idempotent,
  PostgresIdempotencyStore,
  RateLimiter,
  RedisIdempotencyStore,
  RedisRateLimiterStore,
  RESILIENCE_PROBLEMS,
  ResilienceExceptionFilter,
  VirtualClock,
} from '../../lib';
import { json, RunningApp, send, startApp } from '../idempotency/http-kit';
import { RunningServer } from '../support/postgres-server';
import { startRedis } from '../support/redis-server';
import { serverOrSkip } from '../support/server-env';

@Controller()
class ShopController {
  @Get('quotes')
  @RateLimiter('partner')
  quote(): Promise<{ price: number }> {
    return Promise.resolve({ price: 42 });
  }

  @Post('pay')
  @Idempotent()
  pay(@Body() body: { pence: number }): Promise<{ pence: number }> {
    return Promise.resolve({ pence: body.pence });
  }
}

/** A Redis fault: how to provoke it on the server, the client that meets it, and how to undo it. */
interface RedisFault {
  readonly name: string;
  /** The token Redis starts its error text with. */
  readonly token: string;
  provoke(admin: Redis): Promise<unknown>;
  client(port: number): RedisOptions;
  undo(admin: Redis): Promise<unknown>;
}

const PASSWORD = 's3cret';
// Reconnecting, so that a refused AUTH (WRONGPASS) is each command's answer rather than a closed connection.
const noRetries: RedisOptions = { enableReadyCheck: false, maxRetriesPerRequest: 1, retryStrategy: () => 20 };

const FAULTS: readonly RedisFault[] = [
  {
    name: 'a password the client does not send',
    token: 'NOAUTH',
    provoke: (admin) => admin.config('SET', 'requirepass', PASSWORD),
    client: (port) => ({ port, ...noRetries }),
    undo: (admin) => admin.config('SET', 'requirepass', ''),
  },
  {
    name: 'a wrong password',
    token: 'WRONGPASS',
    provoke: (admin) => admin.config('SET', 'requirepass', PASSWORD),
    client: (port) => ({ port, password: 'not-the-password', ...noRetries }),
    undo: (admin) => admin.config('SET', 'requirepass', ''),
  },
  {
    name: 'memory full (maxmemory 1, noeviction)',
    token: 'OOM',
    provoke: async (admin) => {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
    },
    client: (port) => ({ port, ...noRetries }),
    undo: (admin) => admin.config('SET', 'maxmemory', '0'),
  },
  {
    name: 'a read-only replica',
    token: 'READONLY',
    // A replica of a master that is not there: it refuses every write.
    provoke: (admin) => admin.replicaof('127.0.0.1', '1'),
    client: (port) => ({ port, ...noRetries }),
    undo: (admin) => admin.replicaof('NO', 'ONE'),
  },
];

/** A 40-digit hex run: a script's SHA-1, as Redis names it in a script's error. */
const SCRIPT_SHA = /[0-9a-f]{40}/;

describe('store errors never reach clients: generic problem details, the store text in the logs (private real Redis)', () => {
  // The faults change server settings, so they run on a Redis of their own, not the shared one.
  if (serverOrSkip('redis') === undefined) return;

  let root: string;
  let server: RunningServer;
  let port: number;
  let admin: Redis;
  let client: Redis | undefined;
  let running: RunningApp | undefined;
  let warn: jest.SpyInstance;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-store-errors-'));
    server = await startRedis(root);
    port = Number(new URL(server.url).port);
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    await admin.quit();
    await server.stop();
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    warn.mockRestore();
    await running?.close();
    running = undefined;
    client?.disconnect();
    client = undefined;
  });

  const boot = async (fault: RedisFault): Promise<{ storeText: string }> => {
    await fault.provoke(admin);
    client = new Redis(fault.client(port));
    client.on('error', () => undefined);
    // What Redis itself answers this client: the text that must stay out of every answer.
    const storeText = await client.eval("return redis.call('SET', KEYS[1], 'x')", 1, 'probe').then(
      () => {
        throw new Error(`${fault.name} did not make Redis refuse a write`);
      },
      (error: Error) => error.message,
    );
    expect(storeText).toContain(fault.token);
    const clock = new VirtualClock(Date.UTC(2025, 0, 1));
    running = await startApp(
      {
        clock,
        rateLimiterStore: new RedisRateLimiterStore({ client }),
        rateLimiter: { instances: { partner: { shared: true, limitForPeriod: 10, limitRefreshPeriod: '1s' } } },
        idempotency: { store: new RedisIdempotencyStore({ client, clock }), principal: 'shared' },
      },
      { controllers: [ShopController] },
      { prepare: (app) => app.useGlobalFilters(new ResilienceExceptionFilter()) },
    );
    return { storeText };
  };

  const logged = (): string[] => warn.mock.calls.map((args: unknown[]) => String(args[0]));

  describe.each(FAULTS)('Redis with $name', (fault) => {
    afterEach(() => fault.undo(admin));

    it('a shared rate limiter that fails closed answers 429 with a generic detail; the log has the store text and the instance', async () => {
      const { storeText } = await boot(fault);
      const answer = await send(running!.url, '/quotes', { method: 'GET' });
      expect(answer.status).toBe(429);
      expect(json(answer)).toMatchObject({ type: RESILIENCE_PROBLEMS.RATE_LIMITED.type, status: 429, name: 'partner' });
      expect(answer.text).not.toContain(fault.token);
      expect(answer.text).not.toContain(storeText);
      expect(answer.text).not.toMatch(SCRIPT_SHA);
      expect(json(answer).detail).toBe(
        "RateLimiter 'partner' could not get an answer from its store and refused the call",
      );
      expect(logged().some((line) => line.includes("rate limiter 'partner'") && line.includes(fault.token))).toBe(true);
    });

    it('an idempotency store failure answers 503 with a generic detail; the log has the store text and the route', async () => {
      const { storeText } = await boot(fault);
      const answer = await send(running!.url, '/pay', { key: 'k-1', body: { pence: 5 } });
      expect(answer.status).toBe(503);
      expect(json(answer)).toMatchObject({
        type: RESILIENCE_PROBLEMS.IDEMPOTENCY_STORE_UNAVAILABLE.type,
        name: 'ShopController.pay',
      });
      expect(answer.text).not.toContain(fault.token);
      expect(answer.text).not.toContain(storeText);
      expect(answer.text).not.toMatch(SCRIPT_SHA);
      expect(logged().some((line) => line.includes('ShopController.pay') && line.includes(fault.token))).toBe(true);
    });
  });
});

describe('PostgreSQL errors never reach clients either (real PostgreSQL)', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let running: RunningApp | undefined;
  let warn: jest.SpyInstance;

  beforeAll(() => {
    pool = new Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
  });
  afterAll(() => pool.end());
  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    warn.mockRestore();
    await running?.close();
    running = undefined;
  });

  it('a claim PostgreSQL refuses (its table is missing) answers 503 with a generic detail; the log has the error', async () => {
    const table = `missing_${Date.now()}`;
    running = await startApp(
      {
        clock: new VirtualClock(Date.UTC(2025, 0, 1)),
        idempotency: { store: new PostgresIdempotencyStore({ pool, table, createSchema: false }), principal: 'shared' },
      },
      { controllers: [ShopController] },
    );
    const answer = await send(running.url, '/pay', { key: 'k-1', body: { pence: 5 } });
    expect(answer.status).toBe(503);
    expect(json(answer).detail).toBe("The idempotency store is unavailable at 'ShopController.pay': claim failed");
    expect(answer.text).not.toContain(table);
    expect(answer.text).not.toContain('does not exist');
    const lines = warn.mock.calls.map((args: unknown[]) => String(args[0]));
    expect(
      lines.some((line) => line.includes('ShopController.pay') && line.includes(`"${table}" does not exist`)),
    ).toBe(true);
  });
});
