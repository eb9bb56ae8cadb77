import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import {
  Idempotent,
  OutboxEnvelope,
  outboxEventId,
  PostgresOutboxStore,
  ResilienceModule,
  VirtualClock,
} from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { makeRelay, states, tableName } from './outbox-kit';

const FIXTURE = join(__dirname, 'fixtures', 'crashing-order-service.ts');
const LEASE = 30_000;

/** The consumer's effect: one shipment per event id, however often it arrives. */
@Injectable()
class Shipping {
  readonly shipped: string[] = [];

  @Idempotent({ key: outboxEventId })
  async ship(event: OutboxEnvelope<{ orderId: string }>): Promise<void> {
    this.shipped.push(event.payload.orderId);
  }
}

/** Resolves with the first IPC message of `type`, or rejects if the child fails or exits first. */
function message<T>(child: ChildProcess, type: string, count = 1): Promise<T[]> {
  const received: T[] = [];
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string; error?: string }) => {
      if (m.type === type) {
        received.push(m as T);
        if (received.length < count) return;
        cleanup();
        resolve(received);
      } else if (m.type === 'failed') {
        cleanup();
        reject(new Error(`order service failed: ${m.error}`));
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`order service exited (code ${code}, signal ${signal}) before '${type}'`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

describe('the three crash points of the outbox, with SIGKILL', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;
  const redisUrl = serverOrSkip('redis');
  if (redisUrl === undefined) return;

  let pool: Pool;
  let redis: Redis;
  let child: ChildProcess | undefined;
  let outboxTable: string;
  let ordersTable: string;
  let list: string;
  let store: PostgresOutboxStore;
  let clock: VirtualClock;
  let shipping: Shipping;
  let closeConsumer: () => Promise<void>;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 6 });
    redis = new Redis(redisUrl);
  });
  afterAll(async () => {
    await pool.end();
    redis.disconnect();
  });

  beforeEach(async () => {
    outboxTable = tableName();
    ordersTable = tableName('orders');
    list = tableName('published');
    await pool.query(`CREATE TABLE ${ordersTable} (id text PRIMARY KEY)`);
    clock = new VirtualClock(Date.now());
    store = new PostgresOutboxStore({ pool, table: outboxTable, clock });
    await store.ensureSchema();
    @Module({ imports: [ResilienceModule.forRoot({ clock })], providers: [Shipping] })
    class ConsumerModule {}
    const consumer = await Test.createTestingModule({ imports: [ConsumerModule] }).compile();
    await consumer.init();
    shipping = consumer.get(Shipping);
    closeConsumer = () => consumer.close();
  });
  afterEach(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    child = undefined;
    await closeConsumer();
    await pool.query(`DROP TABLE IF EXISTS ${outboxTable}, ${ordersTable}`);
    await redis.del(list);
  });

  /** Starts the order service, which stops at `crashAt`. */
  function orderService(crashAt: string, orders = 1): ChildProcess {
    child = fork(FIXTURE, [], {
      execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
      env: {
        ...process.env,
        CRASH_AT: crashAt,
        CRASH_ORDERS: String(orders),
        CRASH_DATABASE_URL: url,
        CRASH_REDIS_URL: redisUrl,
        CRASH_OUTBOX_TABLE: outboxTable,
        CRASH_ORDERS_TABLE: ordersTable,
        CRASH_LIST: list,
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    return child;
  }

  async function kill(process: ChildProcess): Promise<void> {
    const exited = new Promise((resolve) => process.once('exit', (_code, signal) => resolve(signal)));
    process.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
  }

  /** A relay of the surviving instance that publishes to the same Redis list; its clock starts now, after the crash. */
  function survivor() {
    clock = new VirtualClock(Date.now());
    return makeRelay(
      new PostgresOutboxStore({ pool, table: outboxTable, clock }),
      async (event) => {
        await redis.rpush(list, JSON.stringify({ outbox: 1, ...event }));
      },
      { clock, relay: { lease: LEASE } },
    ).relay;
  }

  /** Every message on the broker, through the idempotent consumer. */
  async function consume(): Promise<number> {
    const messages = await redis.lrange(list, 0, -1);
    for (const text of messages) await shipping.ship(JSON.parse(text) as OutboxEnvelope<{ orderId: string }>);
    return messages.length;
  }

  async function orderCount(): Promise<number> {
    return (await pool.query(`SELECT count(*)::int AS n FROM ${ordersTable}`)).rows[0].n as number;
  }

  it('1. killed before the commit: neither the order nor its event exists', async () => {
    const service = orderService('before-commit');
    await message(service, 'in-transaction');
    await kill(service);
    // The dead connection's transaction never commits: the server rolls it back.
    expect(await orderCount()).toBe(0);
    expect(await states(pool, outboxTable)).toEqual({});
    expect(await survivor().runOnce()).toMatchObject({ claimed: 0 });
    expect(await consume()).toBe(0);
  });

  it('2. killed after the commit, before publishing: the next relay pass publishes it', async () => {
    const service = orderService('after-commit');
    const [{ ids }] = await message<{ ids: string[] }>(service, 'committed');
    await kill(service);
    expect(await orderCount()).toBe(1);
    expect(await states(pool, outboxTable)).toEqual({ pending: 1 });
    expect(await survivor().runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(await consume()).toBe(1);
    expect(shipping.shipped).toEqual(['order-1']);
    expect(JSON.parse((await redis.lindex(list, 0)) as string)).toMatchObject({ id: ids[0] });
  });

  it('3. killed after publishing, before marking: published twice, shipped once', async () => {
    const service = orderService('after-publish');
    await message(service, 'published');
    await kill(service);
    expect(await states(pool, outboxTable)).toEqual({ pending: 1 });
    const relay = survivor();
    // The dead relay's lease still holds the row.
    expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
    await clock.advance(LEASE);
    expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
    expect(await states(pool, outboxTable)).toEqual({ sent: 1 });
    expect(await consume()).toBe(2);
    expect(shipping.shipped).toEqual(['order-1']);
  });

  it('a relay killed while holding a batch: another instance takes the batch over after its lease', async () => {
    const service = orderService('holding-batch', 5);
    await message(service, 'holding', 5);
    await kill(service);
    expect(await states(pool, outboxTable)).toEqual({ pending: 5 });
    const relay = survivor();
    await clock.advance(LEASE - 1000);
    expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
    await clock.advance(1000);
    expect(await relay.runOnce()).toMatchObject({ claimed: 5, published: 5 });
    expect(await consume()).toBe(5);
    expect([...shipping.shipped].sort()).toEqual(['order-1', 'order-2', 'order-3', 'order-4', 'order-5']);
  });
});
