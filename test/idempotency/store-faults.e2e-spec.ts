import { Body, Controller, Injectable, Logger, Post } from '@nestjs/common';
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { Pool, PoolClient } from 'pg';
import { VirtualClock } from '../../lib/kernel/clock';
import {
  Idempotent,
  IdempotencyStoreUnavailableError,
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  RedisIdempotencyStore,
  RESILIENCE_PROBLEMS,
} from '../../lib';
import { scopedKey } from '../../lib/features/idempotency/idempotency-key';
import { REDIS_NOT_DURABLE } from '../../lib/features/idempotency/idempotency.messages';
import { serverOrSkip } from '../support/server-env';
import { Gate, json, RunningApp, ScriptedHandler, send, startApp } from './http-kit';
import { FaultyStore } from './store-targets';

const START = Date.UTC(2025, 0, 1);
const STORE_UNAVAILABLE = RESILIENCE_PROBLEMS.IDEMPOTENCY_STORE_UNAVAILABLE;

@Injectable()
class Charges extends ScriptedHandler {
  count = 0;

  async charge(): Promise<number> {
    this.count++;
    await this.proceed();
    return this.count;
  }
}

@Controller()
class PaymentsController {
  constructor(private readonly charges: Charges) {}

  @Post('pay')
  @Idempotent()
  async pay(@Body() body: { pence: number }) {
    return { charge: await this.charges.charge(), pence: body.pence };
  }
}

describe('@Idempotent when the store fails or hangs', () => {
  let clock: VirtualClock;
  let store: FaultyStore;
  let running: RunningApp;
  let charges: Charges;

  const boot = async (idempotency: Record<string, unknown> = {}) => {
    clock = new VirtualClock(START);
    store = new FaultyStore(new MemoryIdempotencyStore({ clock }));
    running = await startApp(
      { clock, deadline: {}, idempotency: { store: store, principal: 'shared', ...idempotency } },
      { controllers: [PaymentsController], providers: [Charges] },
    );
    charges = running.app.get(Charges);
  };
  afterEach(() => running.close());

  const expectUnavailable = (answer: { status: number; headers: Headers; text: string }) => {
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(json(answer)).toMatchObject({ type: STORE_UNAVAILABLE.type, status: 503, name: 'PaymentsController.pay' });
  };

  it('answers 503 + Retry-After as problem+json when the store errors on claim, and runs nothing', async () => {
    await boot();
    store.failClaim = true;
    const answer = await send(running.url, '/pay', { key: 'k-down', body: { pence: 5 } });
    expectUnavailable(answer);
    expect(json(answer).detail).not.toContain('ECONNREFUSED');
    expect(charges.count).toBe(0);
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['store_unavailable']);
    expect(running.outcomes[0].error).toBeInstanceOf(IdempotencyStoreUnavailableError);
  });

  it('answers 503 once the store has not answered within storeTimeout (2 s by default)', async () => {
    await boot();
    store.hangClaim = true;
    const answer = send(running.url, '/pay', { key: 'k-hang', body: { pence: 5 } });
    await store.watch.until(() => store.started.includes('claim'));
    await clock.advance(2_000);
    expectUnavailable(await answer);
    expect(charges.count).toBe(0);
  });

  it('gives up on a hanging store when the request deadline runs out, before storeTimeout', async () => {
    await boot({ storeTimeout: '1h' });
    store.hangClaim = true;
    const answer = send(running.url, '/pay', {
      key: 'k-deadline',
      body: { pence: 5 },
      headers: { 'x-request-deadline-ms': '500' },
    });
    await store.watch.until(() => store.started.includes('claim'));
    await clock.advance(500);
    expect((await answer).status).toBe(503);
  });

  it('a store that recovers serves the same key normally: one charge', async () => {
    await boot();
    store.failClaim = true;
    expect((await send(running.url, '/pay', { key: 'k-back', body: { pence: 5 } })).status).toBe(503);
    store.failClaim = false;
    const first = await send(running.url, '/pay', { key: 'k-back', body: { pence: 5 } });
    const again = await send(running.url, '/pay', { key: 'k-back', body: { pence: 5 } });
    expect(first.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(charges.count).toBe(1);
  });
});

describe('@Idempotent on a real Redis that fails or stalls', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;

  let admin: Redis;
  let client: Redis;
  let clock: VirtualClock;
  let running: RunningApp;
  let charges: Charges;
  let prefix: string;

  beforeAll(() => {
    admin = new Redis(url);
    client = new Redis(url);
  });
  afterAll(async () => {
    await admin.call('CLIENT', 'UNPAUSE');
    await Promise.all([admin.quit(), client.quit()]);
  });
  beforeEach(async () => {
    clock = new VirtualClock(START);
    prefix = `idem-faults:${randomUUID()}:`;
    running = await startApp(
      { clock, idempotency: { store: new RedisIdempotencyStore({ client, prefix, clock }), principal: 'shared' } },
      { controllers: [PaymentsController], providers: [Charges] },
    );
    charges = running.app.get(Charges);
  });
  afterEach(async () => {
    await admin.call('CLIENT', 'UNPAUSE');
    await running.close();
  });

  it('answers 503 when Redis answers the claim with an error', async () => {
    // A key of the wrong type makes the claim script fail inside Redis (WRONGTYPE).
    await admin.lpush(prefix + scopedKey(undefined, 'POST', '/pay', 'k-wrongtype'), 'not a record');
    const answer = await send(running.url, '/pay', { key: 'k-wrongtype', body: { pence: 5 } });
    expect(answer.status).toBe(503);
    expect(json(answer).type).toBe(STORE_UNAVAILABLE.type);
    expect(charges.count).toBe(0);
  });

  it('answers 503 when Redis stalls on the claim; the claim that lands later is undone, so the retry runs: one charge', async () => {
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    const answer = send(running.url, '/pay', { key: 'k-stall', body: { pence: 5 } });
    // The claim is queued in Redis; the virtual clock runs the store timeout out.
    await waitForBlockedClients(admin);
    await clock.advance(2_000);
    expect((await answer).status).toBe(503);
    await admin.call('CLIENT', 'UNPAUSE');
    // The stalled claim goes through once Redis resumes, and is released at once: "nothing ran" stays true.
    await waitForKeyGone(admin, prefix + scopedKey(undefined, 'POST', '/pay', 'k-stall'));
    const retry = await send(running.url, '/pay', { key: 'k-stall', body: { pence: 5 } });
    expect(retry.status).toBe(201);
    expect(charges.count).toBe(1);
    const again = await send(running.url, '/pay', { key: 'k-stall', body: { pence: 5 } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(charges.count).toBe(1);
  });

  it('gives the client its answer when Redis stalls on completion, and keeps the key: one charge', async () => {
    const gate = new Gate();
    charges.gates.push(gate);
    const answer = send(running.url, '/pay', { key: 'k-stall-complete', body: { pence: 5 } });
    await charges.watch.until(() => charges.count === 1);
    // The charge is made; Redis stalls before the answer can be stored.
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    gate.open();
    await waitForBlockedClients(admin);
    await clock.advance(2_000);
    const first = await answer;
    expect(first.status).toBe(201);
    await admin.call('CLIENT', 'UNPAUSE');
    const retry = await send(running.url, '/pay', { key: 'k-stall-complete', body: { pence: 5 } });
    expect([201, 409]).toContain(retry.status);
    expect(charges.count).toBe(1);
  });
});

describe('@Idempotent on a real PostgreSQL whose table is locked', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let locker: PoolClient | undefined;
  let clock: VirtualClock;
  let running: RunningApp;
  let charges: Charges;
  let table: string;
  let released: number;

  beforeAll(() => {
    pool = new Pool({ connectionString: url, max: 5 });
  });
  afterAll(() => pool.end());
  beforeEach(async () => {
    clock = new VirtualClock(START);
    table = `idem_faults_${randomUUID().replace(/-/g, '')}`;
    released = 0;
    // The store's queries, counting the releases that have come back.
    const watched = {
      query: async (text: string, values?: unknown[]) => {
        const result = await pool.query(text, values);
        if (text.startsWith('DELETE') && text.includes("state = 'in_progress'")) released++;
        return result;
      },
    };
    const store = new PostgresIdempotencyStore({ pool: watched, table, clock });
    running = await startApp(
      { clock, idempotency: { store, principal: 'shared' } },
      { controllers: [PaymentsController], providers: [Charges] },
    );
    charges = running.app.get(Charges);
    // One request creates the table, so the lock below has something to hold.
    expect((await send(running.url, '/pay', { key: 'k-warm', body: { pence: 1 } })).status).toBe(201);
    charges.count = 0;
  });
  afterEach(async () => {
    await locker?.query('ROLLBACK').catch(() => undefined);
    locker?.release();
    locker = undefined;
    await running.close();
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
  });

  it('answers 503 while a lock holds the claim; the claim that lands later is undone, so the retry runs: one charge', async () => {
    locker = await pool.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE`);
    const answer = send(running.url, '/pay', { key: 'k-locked', body: { pence: 5 } });
    await waitForLockWaiter(pool, table);
    await clock.advance(2_000);
    expect((await answer).status).toBe(503);
    await locker.query('COMMIT');
    locker.release();
    locker = undefined;
    // The claim waiting on the lock goes through now, and is released at once.
    for (let i = 0; i < 5_000 && released === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(1);
    const retry = await send(running.url, '/pay', { key: 'k-locked', body: { pence: 5 } });
    expect(retry.status).toBe(201);
    expect(charges.count).toBe(1);
  });
});

/** Resolves once a session waits for a lock on `table`, polling a bounded number of times. */
async function waitForLockWaiter(pool: Pool, table: string): Promise<void> {
  for (let i = 0; i < 5_000; i++) {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = $1::regclass`,
      [`"${table}"`],
    );
    if (Number(rows[0].n) > 0) return;
  }
  throw new Error(`no session waited for the lock on ${table}`);
}

describe('RedisIdempotencyStore durability check', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;

  let client: Redis;
  beforeAll(() => (client = new Redis(url)));
  afterAll(() => client.quit());

  const warningsAtBoot = async (redis: unknown): Promise<string[]> => {
    const warnings: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
    try {
      const running = await startApp(
        {
          idempotency: {
            store: new RedisIdempotencyStore({ client: redis as Redis, prefix: `idem-durability:${randomUUID()}:` }),
            principal: 'shared',
          },
        },
        { controllers: [PaymentsController], providers: [Charges] },
      );
      await running.close();
    } finally {
      spy.mockRestore();
    }
    return warnings;
  };

  it('warns at startup that the test Redis (appendonly no) loses keys on a restart', async () => {
    expect(await client.call('CONFIG', 'GET', 'appendonly')).toEqual(['appendonly', 'no']);
    expect(await warningsAtBoot(client)).toContain(REDIS_NOT_DURABLE('appendonly no'));
  });

  it('says nothing, and still boots, when CONFIG and INFO are disabled', async () => {
    const locked = new Proxy(client, {
      get(target, property, receiver) {
        if (property === 'call' || property === 'info' || property === 'config')
          return () => Promise.reject(new Error("ERR unknown command 'CONFIG'"));
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    expect((await warningsAtBoot(locked)).filter((w) => w.includes('RedisIdempotencyStore'))).toEqual([]);
  });
});

/** Resolves once `key` no longer exists in Redis, polling a bounded number of times. */
async function waitForKeyGone(admin: Redis, key: string): Promise<void> {
  for (let i = 0; i < 5_000; i++) {
    if ((await admin.exists(key)) === 0) return;
  }
  throw new Error(`key ${key} was never released`);
}

/** Resolves once Redis reports a client held by the pause (the store's claim or completion is queued), polling a bounded number of times. */
async function waitForBlockedClients(admin: Redis): Promise<void> {
  for (let i = 0; i < 5_000; i++) {
    if (/blocked_clients:[1-9]/.test(await admin.info('clients'))) return;
  }
  throw new Error('no client was held by CLIENT PAUSE');
}
