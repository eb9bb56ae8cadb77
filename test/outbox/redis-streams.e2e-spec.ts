import { Controller, INestApplicationContext, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MicroserviceOptions, Payload } from '@nestjs/microservices';
import Redis from 'ioredis';
import { ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import {
  Idempotent,
  IdempotencyRegistry,
  idempotencyTransaction,
  Outbox,
  OutboxEnvelope,
  outboxEventId,
  PostgresIdempotencyStore,
  PostgresOutboxStore,
  RedisStreamsContext,
  RedisStreamsPublisher,
  RedisStreamsServer,
  ResilienceModule,
  VirtualClock,
} from '../../lib';
import { OutboxRelay } from '../../lib/features/outbox/outbox-relay';
import { RunningServer } from '../support/postgres-server';
import { startCuttingProxy } from '../support/cutting-proxy';
import { startRedis } from '../support/redis-server';
import { untilGroupCaughtUp } from '../support/redis-stream-group';
import { serverOrSkip } from '../support/server-env';
import { inTransaction, makeRelay, states, tableName } from './outbox-kit';

const TOPIC = 'order.created';
const GROUP = 'shipping';
const FIXTURE = join(__dirname, 'fixtures', 'redis-streams-consumer.ts');
/** Four child consumers, each a ts-node compile of Nest and the library: slow on a busy machine. */
const CHILD_TEST_MS = 300_000;
const TEST_MS = 120_000;

/** Resolves once a count is reached. */
class Counter {
  count = 0;
  private waiters: Array<{ count: number; resolve: () => void }> = [];

  add(): void {
    this.count++;
    this.waiters = this.waiters.filter((w) => (this.count >= w.count ? (w.resolve(), false) : true));
  }

  until(count: number): Promise<void> {
    return this.count >= count ? Promise.resolve() : new Promise((resolve) => this.waiters.push({ count, resolve }));
  }
}

/** The in-process consumer's table, and what it saw. */
const consumerState = { shipments: '', bodies: 0, redelivered: 0 };

/** The consumer: one shipment per event id, written in the key's transaction. */
@Controller()
class Shipping {
  @EventPattern(TOPIC)
  @Idempotent({ key: outboxEventId, transactional: true })
  async onOrderCreated(
    @Payload() event: OutboxEnvelope<{ orderId: string }>,
    // NestJS 12 types an event handler's arguments after the payload as unknown.
    @Ctx() context: unknown,
  ): Promise<void> {
    consumerState.bodies++;
    if ((context as RedisStreamsContext).isRedelivery()) consumerState.redelivered++;
    await idempotencyTransaction().query(
      `INSERT INTO ${consumerState.shipments} (event_id, order_id) VALUES ($1, $2)`,
      [event.id, event.payload.orderId],
    );
  }
}

/*
 * NestJS 12's microservices package is ES modules only; under Jest's CommonJS runtime its transports cannot be
 * loaded (see brokers.e2e-spec.ts), so the consumer round trips run on NestJS 11; on NestJS 12, test/smoke-esm runs
 * one under Vitest.
 */
const microservicesAreEsm =
  JSON.parse(readFileSync(join(__dirname, '../../node_modules/@nestjs/microservices/package.json'), 'utf8')).type ===
  'module';
const describeWithMicroservices = microservicesAreEsm ? describe.skip : describe;

describeWithMicroservices('Redis Streams: outbox → XADD → consumer group → idempotent consumer', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;
  // The suite restarts Redis, so it runs its own (with the append-only file); the shared one must be there too.
  if (serverOrSkip('redis') === undefined) return;

  let root: string;
  let redis: RunningServer;
  let port: number;
  let pool: Pool;
  let admin: Redis;
  let clock: VirtualClock;
  let outboxTable: string;
  let keysTable: string;
  let producer: INestApplicationContext;
  let producerClient: Redis;
  let relay: OutboxRelay;
  let consumer: INestMicroservice | undefined;
  let consumerClient: Redis | undefined;
  let executed: Counter;
  let children: ChildProcess[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-streams-'));
    redis = await startRedis(root, { appendOnly: true });
    port = Number(new URL(redis.url).port);
    pool = new Pool({ connectionString: url, max: 8 });
    pool.on('error', () => undefined);
    admin = new Redis(redis.url, { lazyConnect: true });
    admin.on('error', () => undefined);
  }, 60_000);

  afterAll(async () => {
    admin?.disconnect();
    await pool?.end();
    await redis?.stop();
    await rm(root, { recursive: true, force: true });
  }, 60_000);

  beforeEach(async () => {
    outboxTable = tableName();
    keysTable = tableName('consumer_keys');
    consumerState.shipments = tableName('shipments');
    consumerState.bodies = 0;
    consumerState.redelivered = 0;
    executed = new Counter();
    await pool.query(
      `CREATE TABLE ${consumerState.shipments} (id serial PRIMARY KEY, event_id text NOT NULL, order_id text NOT NULL)`,
    );
    await admin.del(TOPIC);
    clock = new VirtualClock(Date.now());
    const store = new PostgresOutboxStore({ pool, table: outboxTable, clock });
    await store.ensureSchema();
    // Fails fast while Redis is down, so the relay counts the publish failed instead of queueing it.
    producerClient = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    producerClient.on('error', () => undefined);
    const publisher = RedisStreamsPublisher({ client: producerClient });
    @Module({
      imports: [
        ResilienceModule.forRoot({
          clock,
          outbox: { store, publisher, relay: { enabled: false }, createSchema: false },
        }),
      ],
    })
    class ProducerModule {}
    producer = await NestFactory.createApplicationContext(ProducerModule, { logger: false });
    await producer.init();
    relay = makeRelay(store, (event) => publisher.publish(event), { clock }).relay;
  }, 60_000);

  afterEach(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    children = [];
    await consumer?.close();
    consumer = undefined;
    consumerClient?.disconnect();
    consumerClient = undefined;
    await producer?.close();
    producerClient?.disconnect();
    await pool.query(`DROP TABLE IF EXISTS ${outboxTable}, ${consumerState.shipments}, ${keysTable}`);
  }, 60_000);

  /** Commits orders `from` … `to - 1`, one transaction each, their events added through `Outbox.add`. */
  async function commit(from: number, to: number): Promise<string[]> {
    const outbox = producer.get(Outbox);
    const ids: string[] = [];
    for (let i = from; i < to; i++)
      ids.push(
        await inTransaction(pool, (tx) => outbox.add(TOPIC, { orderId: `order-${i}` }, { key: `order-${i}`, tx })),
      );
    return ids;
  }

  /** Relay passes until nothing is pending, moving the clock past each backoff; the failed publishes. */
  async function drain(): Promise<number> {
    let failed = 0;
    for (let pass = 0; pass < 200; pass++) {
      const result = await relay.runOnce();
      failed += result.failed;
      if ((await states(pool, outboxTable)).pending === undefined) return failed;
      if (result.claimed === 0) await clock.advance(10 * 60_000);
    }
    throw new Error(`the outbox still has pending events: ${JSON.stringify(await states(pool, outboxTable))}`);
  }

  /** Starts the in-process consumer; `reader`, when given, makes the connection that blocks in `XREADGROUP`. */
  async function startConsumer(name: string, reader?: () => Redis): Promise<void> {
    const client = new Redis(redis.url);
    consumerClient = client;
    client.on('error', () => undefined);
    @Module({
      imports: [
        ResilienceModule.forRoot({
          idempotency: { store: new PostgresIdempotencyStore({ pool, table: keysTable }), storeTimeout: '15s' },
        }),
      ],
      controllers: [Shipping],
    })
    class ConsumerModule {}
    consumer = await NestFactory.createMicroservice<MicroserviceOptions>(ConsumerModule, {
      strategy: RedisStreamsServer({
        client:
          reader === undefined
            ? client
            : {
                call: (command, ...args) => client.call(command, ...args),
                disconnect: () => client.disconnect(),
                duplicate: reader,
              },
        group: GROUP,
        consumer: name,
        claimIdle: '1m',
        clock,
      }),
      logger: false,
    });
    consumer.get(IdempotencyRegistry).onOutcome((event) => {
      if (event.outcome === 'executed') executed.add();
    });
    await consumer.listen();
  }

  /** Shipments per event id. */
  async function shipped(): Promise<Map<string, number>> {
    const { rows } = await pool.query(
      `SELECT event_id, count(*)::int AS n FROM ${consumerState.shipments} GROUP BY event_id`,
    );
    return new Map(rows.map((r) => [r.event_id as string, r.n as number]));
  }

  /**
   * Resolves once `count` distinct events are applied; fails, naming what it saw, after `ms` of real time. Each
   * poll moves the clock a second, so an in-process consumer pausing after a failed read goes on.
   */
  async function untilApplied(count: number, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const applied = (await shipped()).size;
      if (applied >= count) return;
      if (Date.now() > deadline)
        throw new Error(
          `${applied} of ${count} events applied within ${ms} ms; pending in the group: ${await pendingEntries()}`,
        );
      await clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function pendingEntries(): Promise<number> {
    const [count] = (await admin.xpending(TOPIC, GROUP)) as [number];
    return count;
  }

  it(
    'applies once each of 200 events committed while the consumer was down, after it starts',
    async () => {
      const committed = await commit(0, 200);
      expect(await drain()).toBe(0);
      expect(await states(pool, outboxTable)).toEqual({ sent: 200 });
      expect(await admin.xlen(TOPIC)).toBe(200);

      await startConsumer('shipping-a');
      await executed.until(200);
      await consumer?.close();
      consumer = undefined;

      const applied = await shipped();
      expect(consumerState.bodies).toBe(200);
      expect([...applied.keys()].sort()).toEqual([...committed].sort());
      expect([...applied.values()].every((n) => n === 1)).toBe(true);
      expect(await pendingEntries()).toBe(0);
    },
    TEST_MS,
  );

  it(
    'loses nothing committed when Redis restarts during a steady stream',
    async () => {
      await startConsumer('shipping-c');
      const committed: string[] = [];
      let failedWhileDown = 0;
      let inStreamBeforeStop = 0;
      for (let batch = 0; batch < 15; batch++) {
        if (batch === 5) {
          inStreamBeforeStop = await admin.xlen(TOPIC);
          await redis.stop();
        }
        if (batch === 10) {
          redis = await startRedis(root, { port, appendOnly: true });
          if (producerClient.status !== 'ready') await new Promise((resolve) => producerClient.once('ready', resolve));
        }
        committed.push(...(await commit(batch * 10, batch * 10 + 10)));
        const result = await relay.runOnce();
        if (batch >= 5 && batch < 10) failedWhileDown += result.failed;
      }
      // Whatever failed while Redis was down is published now.
      await drain();
      expect(await states(pool, outboxTable)).toEqual({ sent: 150 });
      await untilApplied(150, 60_000);
      await consumer?.close();
      consumer = undefined;

      const applied = await shipped();
      const lost = committed.filter((id) => !applied.has(id));
      process.stdout.write(
        `[redis streams restart] committed ${committed.length}, in the stream before the stop ${inStreamBeforeStop}, ` +
          `publishes failed while down ${failedWhileDown}, applied ${applied.size} (handed over again ` +
          `${consumerState.redelivered}), lost ${lost.length}\n`,
      );
      expect(failedWhileDown).toBeGreaterThan(0);
      expect(inStreamBeforeStop).toBe(50);
      // The append-only file kept what was added before the stop, and the group with it.
      expect(await admin.xlen(TOPIC)).toBeGreaterThanOrEqual(150);
      expect(lost).toEqual([]);
      expect(applied.size).toBe(150);
      expect([...applied.values()].every((n) => n === 1)).toBe(true);
      expect(await pendingEntries()).toBe(0);
    },
    TEST_MS,
  );

  it(
    'hands over at once an entry whose read reply was lost with the connection, instead of after claimIdle',
    async () => {
      // A stopping Redis, or a network cut, can lose the reply to an XREADGROUP it served: the entry is then
      // pending for this consumer although its handler never saw it, and the read is sent again on the new
      // connection for newer entries only.
      const proxy = await startCuttingProxy(port);
      try {
        await startConsumer('shipping-e', () => {
          const reader = new Redis(proxy.url);
          reader.on('error', () => undefined);
          return reader;
        });
        const cut = proxy.cutNextReplyTo('XREADGROUP');
        const [id] = await commit(0, 1);
        expect(await drain()).toBe(0);
        await cut;

        // claimIdle is a minute and the clock moves a second per poll: only a read of the consumer's own
        // pending entries hands it over within this bound.
        await untilApplied(1, 15_000);
        await consumer?.close();
        consumer = undefined;
        expect(await shipped()).toEqual(new Map([[id, 1]]));
        expect(consumerState.bodies).toBe(1);
        expect(consumerState.redelivered).toBe(1);
        expect(await pendingEntries()).toBe(0);
      } finally {
        await proxy.close();
      }
    },
    TEST_MS,
  );

  /** What the child consumers reported. */
  interface Reports {
    bodies: number;
    redelivered: number;
    executed: number;
    replayed: number;
    inProgress: number;
    crashIds: string[];
  }

  function childConsumer(name: string, crashAt: string, reports: Reports, nth = 8): ChildProcess {
    const child = fork(FIXTURE, [], {
      execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
      env: {
        ...process.env,
        CONSUMER_NAME: name,
        CONSUMER_CRASH_AT: crashAt,
        CONSUMER_CRASH_NTH: String(nth),
        CONSUMER_DATABASE_URL: url,
        CONSUMER_REDIS_URL: redis.url,
        CONSUMER_SHIPMENTS: consumerState.shipments,
        CONSUMER_KEYS: keysTable,
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    children.push(child);
    child.on('message', (m: { type: string; outcome?: string; redelivery?: boolean; id?: string }) => {
      if (m.type === 'handling') {
        reports.bodies++;
        if (m.redelivery === true) reports.redelivered++;
      } else if (m.type === 'outcome') {
        if (m.outcome === 'executed') {
          reports.executed++;
          executed.add();
        } else if (m.outcome === 'replayed') reports.replayed++;
        else if (m.outcome === 'in_progress') reports.inProgress++;
      } else if (m.type === 'crash-point') reports.crashIds.push(m.id as string);
    });
    return child;
  }

  /** Resolves with the first IPC message of `type`; rejects if the child fails or exits first. */
  function message(child: ChildProcess, type: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: { type: string; error?: string }) => {
        if (m.type === type) done(resolve);
        else if (m.type === 'failed') done(() => reject(new Error(`consumer failed: ${m.error}`)));
      };
      const onExit = (code: number | null, signal: string | null) =>
        done(() => reject(new Error(`consumer exited (code ${code}, signal ${signal}) before '${type}'`)));
      const done = (then: () => void) => {
        child.off('message', onMessage);
        child.off('exit', onExit);
        then();
      };
      child.on('message', onMessage);
      child.on('exit', onExit);
    });
  }

  async function kill(child: ChildProcess): Promise<void> {
    const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
  }

  it(
    'applies every event exactly once when the consumer is SIGKILLed mid-message three times',
    async () => {
      const committed = await commit(0, 60);
      await drain();
      const reports: Reports = {
        bodies: 0,
        redelivered: 0,
        executed: 0,
        replayed: 0,
        inProgress: 0,
        crashIds: [],
      };
      const crashes = ['mid-handler', 'before-ack', 'mid-handler'];
      for (const [i, crashAt] of crashes.entries()) {
        const child = childConsumer(`shipping-${i + 1}`, crashAt, reports);
        await message(child, 'crash-point');
        await kill(child);
      }
      const survivor = childConsumer('shipping-4', 'none', reports);
      await message(survivor, 'listening');
      // Every event applied, as PostgreSQL counts it, and every entry handed to the group and acknowledged, as Redis
      // counts it: a consumer killed right after a commit or with an XACK in flight may have had it applied without
      // living to report it, so the reports cannot be waited for.
      await untilApplied(committed.length, 60_000);
      await untilGroupCaughtUp(admin, TOPIC, GROUP, 60_000);
      await kill(survivor);

      const applied = await shipped();
      const lost = committed.filter((id) => !applied.has(id));
      const delivered = reports.bodies + reports.replayed + reports.inProgress;
      const duplicates = reports.replayed + reports.inProgress;
      process.stdout.write(
        `[redis streams SIGKILL x3] committed ${committed.length}, delivered ${delivered} ` +
          `(handler bodies ${reports.bodies}, of which redeliveries ${reports.redelivered}), ` +
          `duplicates absorbed ${duplicates} (replayed ${reports.replayed}, in progress ${reports.inProgress}), ` +
          `applied ${applied.size}, lost ${lost.length}\n`,
      );
      expect(reports.crashIds).toHaveLength(3);
      expect(lost).toEqual([]);
      expect(applied.size).toBe(committed.length);
      expect([...applied.values()].every((n) => n === 1)).toBe(true);
      // Reports a killed consumer sent last may be lost with it: never more than the events, never a second execution.
      expect(reports.executed).toBeLessThanOrEqual(committed.length);
      // The entry whose handler committed but was never acknowledged came again, and was absorbed.
      expect(reports.replayed).toBeGreaterThanOrEqual(1);
      // The entries left pending by the killed consumers were taken over and handled.
      expect(reports.redelivered).toBeGreaterThanOrEqual(2);
      expect(await pendingEntries()).toBe(0);
    },
    CHILD_TEST_MS,
  );
});
