import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import request from 'supertest';
import { Outbox, PostgresIdempotencyStore } from 'resilience4nest';
import { RunningServer } from '../../test/support/postgres-server';
import { startRedis } from '../../test/support/redis-server';
import { untilGroupCaughtUp } from '../../test/support/redis-stream-group';
import { serverOrSkip } from '../../test/support/server-env';
import { shopEvents } from '../src/events/shop-events';
import { FULFILMENT_GROUP } from '../src/fulfilment/fulfilment.module';
import { shopDatabase } from '../src/ops/shop-database';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

const TOPIC = 'payment.captured';
const FIXTURE = join(__dirname, 'fixtures', 'fulfilment-consumer.ts');
const ORDERS = 6;
/** Three child consumers, each a ts-node compile of Nest, the library and the sample: slow on a busy machine. */
const TEST_MS = 600_000;
/** The longest wait for the consumers (real time: they are other processes); a test that would hang fails with its counts. */
const CONSUMERS_MS = 120_000;
/** Most looks at the outbox or the stream while waiting for the relay, one query or command each. */
const LOOKS = 2_000;

/** What the child consumers reported. */
interface Reports {
  shipping: number;
  executed: number;
  replayed: number;
  inProgress: number;
  crashes: number;
}

/*
 * NestJS 12's microservices package is ES modules only; under Jest's CommonJS runtime its transports cannot be
 * loaded (see test/outbox/brokers.e2e-spec.ts), so this round trip runs on NestJS 11.
 */
const microservicesAreEsm =
  JSON.parse(readFileSync(join(__dirname, '../../node_modules/@nestjs/microservices/package.json'), 'utf8')).type ===
  'module';
const describeWithMicroservices = microservicesAreEsm ? describe.skip : describe;

/**
 * The shop with its database and Redis: a charged payment is recorded with
 * its `payment.captured` event in one transaction, the outbox relay adds
 * the event to a Redis stream, and the fulfilment consumer (a child process,
 * as `main.ts` connects it) ships once per event, though it is SIGKILLed
 * mid-message and the relay publishes an event twice.
 */
describeWithMicroservices('sample app: payment.captured over Redis Streams', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;
  // The stream is named by the topic: a Redis of its own keeps other suites' entries out of it.
  if (serverOrSkip('redis') === undefined) return;

  // A database of its own: the shop uses its default table names.
  const name = `shop_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const shopUrl = Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  let root: string;
  let redis: RunningServer;
  let redisAdmin: Redis;
  let admin: Pool;
  let pool: Pool;
  let app: INestApplication;
  let driver: ClockDriver;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-shop-'));
    redis = await startRedis(root);
    redisAdmin = new Redis(redis.url);
    redisAdmin.on('error', () => undefined);
    admin = new Pool({ connectionString: url, max: 1 });
    await admin.query(`CREATE DATABASE ${name}`);
    pool = new Pool({ connectionString: shopUrl, max: 8 });
    // Dropping the database at the end ends any connection still open, which the pool then reports.
    pool.on('error', () => undefined);
    ({ app, driver } = await bootSampleApp(
      ['error'],
      'express',
      (clock) => ({ store: new PostgresIdempotencyStore({ pool, clock }), close: async () => undefined }),
      undefined,
      {},
      () => shopDatabase(pool),
      () => shopEvents(redis.url),
    ));
  }, 60_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    driver?.restore();
    await app?.close();
    await admin?.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin?.end();
    redisAdmin?.disconnect();
    await redis?.stop();
    await rm(root, { recursive: true, force: true });
  }, 60_000);

  const rows = async (sql: string) => (await pool.query(sql)).rows;
  const pay = (key: string, paymentId: string) =>
    request(app.getHttpServer())
      .post('/payments')
      .set('idempotency-key', key)
      .set('x-customer-id', 'c-1')
      .send({ paymentId, amount: 1999 });

  /** The outbox rows once the relay has marked every one sent. */
  async function outboxAllSent(): Promise<Array<{ id: string; key: string; state: string }>> {
    for (let look = 0; look < LOOKS; look++) {
      const events = await rows('SELECT id, key, state FROM resilience4nest_outbox ORDER BY key');
      if (events.every((event) => event.state === 'sent')) return events;
    }
    throw new Error('the relay left an outbox event pending');
  }

  /** The stream's length once it reached `length`. */
  async function streamLength(length: number): Promise<number> {
    for (let look = 0; look < LOOKS; look++) {
      const now = await redisAdmin.xlen(TOPIC);
      if (now >= length) return now;
    }
    throw new Error(`the stream '${TOPIC}' did not reach ${length} entries`);
  }

  function consumer(consumerName: string, crashAt: string, nth: number, reports: Reports): ChildProcess {
    const child = fork(FIXTURE, [], {
      execArgv: [
        '-r',
        require.resolve('ts-node/register/transpile-only'),
        '-r',
        require.resolve('tsconfig-paths/register'),
      ],
      env: {
        ...process.env,
        TS_NODE_PROJECT: join(__dirname, '../../tsconfig.json'),
        CONSUMER_NAME: consumerName,
        CONSUMER_CRASH_AT: crashAt,
        CONSUMER_CRASH_NTH: String(nth),
        CONSUMER_DATABASE_URL: shopUrl,
        CONSUMER_REDIS_URL: redis.url,
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    children.push(child);
    child.on('message', (m: { type: string; outcome?: string }) => {
      if (m.type === 'shipping') reports.shipping++;
      else if (m.type === 'crash-point') reports.crashes++;
      else if (m.type === 'outcome') {
        if (m.outcome === 'executed') reports.executed++;
        else if (m.outcome === 'replayed') reports.replayed++;
        else if (m.outcome === 'in_progress') reports.inProgress++;
      }
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

  /** `promise`, or a failure naming `what` and the counts so far after {@link CONSUMERS_MS}. */
  async function within<T>(promise: Promise<T>, what: string, reports: Reports): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const watchdog = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} did not happen in ${CONSUMERS_MS} ms: ${JSON.stringify(reports)}`)),
        CONSUMERS_MS,
      );
    });
    try {
      return await Promise.race([promise, watchdog]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function kill(child: ChildProcess): Promise<void> {
    const exited = new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
  }

  it(
    'ships each paid order once, though its consumer is SIGKILLed mid-message and the relay publishes an event twice',
    async () => {
      for (let i = 0; i < ORDERS; i++) {
        const charged = await pay(`order-${i}`, `p-${i}`).expect(201);
        expect(charged.body).toMatchObject({ status: 'charged', paymentId: `p-${i}` });
      }
      const events = await outboxAllSent();
      expect(events.map((e) => e.key)).toEqual(Array.from({ length: ORDERS }, (_, i) => `p-${i}`));
      expect(await streamLength(ORDERS)).toBe(ORDERS);

      // What a relay that crashed after publishing, before marking the event sent, leaves behind.
      await pool.query(
        `UPDATE resilience4nest_outbox SET state = 'pending', sent_at = NULL, lease_owner = NULL, available_at = 0 WHERE id = $1`,
        [events[0].id],
      );
      app.get(Outbox).relay?.wake();
      expect(await streamLength(ORDERS + 1)).toBe(ORDERS + 1);
      await outboxAllSent();

      const reports: Reports = {
        shipping: 0,
        executed: 0,
        replayed: 0,
        inProgress: 0,
        crashes: 0,
      };
      // Killed with its second shipment written and not committed, then one killed with a shipment committed, not acknowledged.
      for (const [i, [crashAt, nth]] of (
        [
          ['mid-handler', 2],
          ['before-ack', 1],
        ] as const
      ).entries()) {
        const child = consumer(`fulfilment-${i + 1}`, crashAt, nth, reports);
        await within(message(child, 'crash-point'), `consumer ${i + 1} reaching its crash point`, reports);
        await kill(child);
      }
      const survivor = consumer('fulfilment-3', 'none', 0, reports);
      await within(message(survivor, 'listening'), 'the last consumer listening', reports);
      // Every entry handed to the group and acknowledged, as Redis counts it: a consumer killed with an XACK in
      // flight may have had it applied without living to report it.
      await within(
        untilGroupCaughtUp(redisAdmin, TOPIC, FULFILMENT_GROUP, CONSUMERS_MS),
        'every entry acknowledged',
        reports,
      );
      await kill(survivor);

      const shipped = await rows('SELECT payment_id, count(*)::int AS n FROM shop_shipments GROUP BY payment_id');
      const perOrder = new Map(shipped.map((r) => [r.payment_id as string, r.n as number]));
      const lost = events.filter((e) => !perOrder.has(e.key));
      process.stdout.write(
        `[sample shop, payment.captured over Redis Streams] paid ${ORDERS}, stream entries ${ORDERS + 1}, ` +
          `consumers killed ${reports.crashes}, shipments written ${reports.shipping}, executed ${reports.executed}, ` +
          `duplicates absorbed ${reports.replayed + reports.inProgress} (replayed ${reports.replayed}, ` +
          `in progress ${reports.inProgress}), shipped ${perOrder.size}, lost ${lost.length}\n`,
      );
      expect(reports.crashes).toBe(2);
      expect(lost).toEqual([]);
      expect(Object.fromEntries(perOrder)).toEqual(
        Object.fromEntries(Array.from({ length: ORDERS }, (_, i) => [`p-${i}`, 1])),
      );
      expect(reports.executed).toBe(ORDERS);
      // The shipment rolled back by the first kill was written again: one write more than orders.
      expect(reports.shipping).toBe(ORDERS + 1);
      // The event published twice and the one committed but not acknowledged came again, and were absorbed.
      expect(reports.replayed).toBeGreaterThanOrEqual(2);
      const [pending] = (await redisAdmin.xpending(TOPIC, FULFILMENT_GROUP)) as [number];
      expect(pending).toBe(0);
    },
    TEST_MS,
  );
});
