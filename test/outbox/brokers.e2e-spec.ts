import { Controller, INestApplicationContext, INestMicroservice, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ClientProxy,
  ClientProxyFactory,
  ClientOptions,
  Ctx,
  EventPattern,
  NatsContext,
  NatsRecordBuilder,
  Payload,
  RmqContext,
  RmqRecordBuilder,
  Transport,
} from '@nestjs/microservices';
import { headers as natsHeaders } from 'nats';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { lastValueFrom } from 'rxjs';
import {
  Idempotent,
  IdempotencyRegistry,
  idempotencyTransaction,
  Outbox,
  OUTBOX_EVENT_ID_HEADER,
  OutboxEnvelope,
  outboxEventId,
  PostgresIdempotencyStore,
  PostgresOutboxStore,
  ResilienceModule,
} from '../../lib';
import { RunningBroker } from '../support/broker-process';
import { startNats } from '../support/nats-server';
import { startRabbitMq } from '../support/rabbitmq-server';
import { isCi, serverOrSkip } from '../support/server-env';
import { tableName } from './outbox-kit';

/** Tables of the running suite: the shop's orders, and the consumer's shipments. */
const tables = { orders: '', shipments: '' };

/** Resolves once `count` shipments were applied. */
class Applied {
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
const applied = new Applied();
let deliveries = 0;
const seen = new Map<string, number>();
const replayed = new Applied();
/** What each delivery carried as transport headers: the event id header, and RabbitMQ's messageId. */
const carried: Array<{ id: string; header?: unknown; messageId?: unknown }> = [];
/** Deliveries of messages with a plain payload and only the header to key on. */
const plain = new Applied();
/** Their runs whose key was completed. */
const plainExecuted = new Applied();

function transportHeaders(context: unknown): { header?: unknown; messageId?: unknown } {
  if (context instanceof NatsContext) return { header: context.getHeaders()?.get(OUTBOX_EVENT_ID_HEADER) };
  if (context instanceof RmqContext) {
    const { properties } = context.getMessage() as {
      properties: { headers?: Record<string, unknown>; messageId?: unknown };
    };
    return { header: properties.headers?.[OUTBOX_EVENT_ID_HEADER], messageId: properties.messageId };
  }
  return {};
}

/** The order service: the order row, the event and the key commit together. */
@Injectable()
class Orders {
  constructor(private readonly outbox: Outbox) {}

  @Idempotent({ key: (order: { id: string }) => order.id, transactional: true })
  async place(order: { id: string; pence: number }): Promise<{ eventId: string }> {
    await idempotencyTransaction().query(`INSERT INTO ${tables.orders} (id, pence) VALUES ($1, $2)`, [
      order.id,
      order.pence,
    ]);
    const eventId = await this.outbox.add(
      'order.created',
      { orderId: order.id, pence: order.pence },
      { key: order.id },
    );
    return { eventId };
  }
}

/** The consumer: one shipment per order, however often the event arrives. */
@Controller()
class Shipping {
  @EventPattern('order.created')
  @Idempotent({ key: outboxEventId, transactional: true })
  async onOrderCreated(
    @Payload() event: OutboxEnvelope<{ orderId: string; pence: number }>,
    @Ctx() context: unknown,
  ): Promise<void> {
    deliveries++;
    carried.push({ id: event.id, ...transportHeaders(context) });
    seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
    await idempotencyTransaction().query(`INSERT INTO ${tables.shipments} (order_id) VALUES ($1)`, [
      event.payload.orderId,
    ]);
    applied.add();
  }

  /** Keyed on the header alone: the payload is not an envelope. */
  @EventPattern('order.plain')
  @Idempotent({ key: outboxEventId })
  async onPlain(@Payload() _order: { orderId: string }, @Ctx() _context: unknown): Promise<void> {
    plain.add();
  }
}

interface Transport_ {
  readonly name: string;
  readonly start: (root: string) => Promise<RunningBroker | undefined>;
  readonly options: (port: number) => ClientOptions;
  /** What a delivery carries besides the envelope, for the event `id`. */
  readonly headers: (id: string) => { header?: unknown; messageId?: unknown };
  /** A message with a plain payload and only the event id header, on a transport that has headers. */
  readonly headerOnly?: (id: string, payload: object) => unknown;
}

const TRANSPORTS: Transport_[] = [
  {
    name: 'Redis',
    start: async () => {
      const url = process.env.RESILIENCE_TEST_REDIS_URL;
      return url === undefined ? undefined : { port: Number(new URL(url).port), stop: async () => undefined };
    },
    options: (port) => ({ transport: Transport.REDIS, options: { host: '127.0.0.1', port } }),
    headers: () => ({}),
  },
  {
    name: 'NATS',
    start: () => startNats(),
    options: (port) => ({ transport: Transport.NATS, options: { servers: [`nats://127.0.0.1:${port}`] } }),
    headers: (id) => ({ header: id }),
    headerOnly: (id, payload) => {
      const carrying = natsHeaders();
      carrying.set(OUTBOX_EVENT_ID_HEADER, id);
      return new NatsRecordBuilder(payload).setHeaders(carrying).build();
    },
  },
  {
    name: 'RabbitMQ',
    start: (root) => startRabbitMq(root),
    options: (port) => ({
      transport: Transport.RMQ,
      options: { urls: [`amqp://guest:guest@127.0.0.1:${port}`], queue: 'orders', queueOptions: { durable: false } },
    }),
    headers: (id) => ({ header: id, messageId: id }),
    headerOnly: (id, payload) =>
      new RmqRecordBuilder(payload).setOptions({ headers: { [OUTBOX_EVENT_ID_HEADER]: id } }).build(),
  },
];

/*
 * NestJS 12's microservices package is ES modules only; under Jest's CommonJS runtime (Babel turns it into
 * CommonJS) its transports cannot load their client libraries (`loadPackage` exits the process), so the
 * broker round trips run on NestJS 11, where the same transports load as CommonJS (test/smoke-esm runs the Redis Streams
 * round trip on NestJS 12).
 */
const microservicesAreEsm =
  JSON.parse(readFileSync(join(__dirname, '../../node_modules/@nestjs/microservices/package.json'), 'utf8')).type ===
  'module';
const describeWithBrokers = microservicesAreEsm ? describe.skip : describe;

describeWithBrokers.each(TRANSPORTS)('order service → outbox → $name → idempotent consumer', (transport) => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let root: string;
  let broker: RunningBroker | undefined;
  let pool: Pool;
  let producer: INestApplicationContext;
  let consumer: INestMicroservice;
  let client: ClientProxy;
  let outboxStore: PostgresOutboxStore;
  let outboxTable: string;
  let unavailable: string | undefined;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-broker-'));
    try {
      broker = await transport.start(root);
      if (broker === undefined) unavailable = `${transport.name} was not started by the test setup`;
    } catch (error) {
      unavailable = `${transport.name} could not be started: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (unavailable !== undefined) {
      if (isCi()) throw new Error(unavailable);
      process.stderr.write(`\n[outbox brokers] ${unavailable}\n`);
      return;
    }
    const port = (broker as RunningBroker).port;
    pool = new Pool({ connectionString: url, max: 10 });
    tables.orders = tableName('orders');
    tables.shipments = tableName('shipments');
    await pool.query(`CREATE TABLE ${tables.orders} (id text PRIMARY KEY, pence int NOT NULL)`);
    await pool.query(`CREATE TABLE ${tables.shipments} (id serial PRIMARY KEY, order_id text NOT NULL)`);
    outboxTable = tableName();
    outboxStore = new PostgresOutboxStore({ pool, table: outboxTable });

    @Module({
      imports: [
        ResilienceModule.forRoot({
          idempotency: { store: new PostgresIdempotencyStore({ pool, table: tableName('consumer_keys') }) },
        }),
      ],
      controllers: [Shipping],
    })
    class ConsumerModule {}
    consumer = await NestFactory.createMicroservice(ConsumerModule, { ...transport.options(port), logger: false });
    consumer.get(IdempotencyRegistry).onOutcome((event) => {
      if (event.outcome === 'replayed') replayed.add();
      if (event.outcome === 'executed' && event.name === 'Shipping.onPlain') plainExecuted.add();
    });
    await consumer.listen();

    client = ClientProxyFactory.create(transport.options(port));
    @Module({
      imports: [
        ResilienceModule.forRoot({
          // Twenty orders start at once on a cold pool: on a loaded machine their claims can wait longer than the default 2 s.
          idempotency: {
            store: new PostgresIdempotencyStore({ pool, table: tableName('producer_keys') }),
            storeTimeout: '15s',
          },
          retry: { instances: { outbox: { maxAttempts: 3, waitDuration: 50 } } },
          // The poll is slow on purpose: publication follows the commit through LISTEN/NOTIFY.
          outbox: {
            store: outboxStore,
            publisher: client,
            relay: { pollInterval: '1h', lease: '2h' },
            // Redis pub/sub and NATS core deliver at most once: tested here on purpose, with the consumer up.
            allowAtMostOnce: true,
          },
        }),
      ],
      providers: [Orders],
    })
    class ProducerModule {}
    producer = await NestFactory.createApplicationContext(ProducerModule, { logger: false });
    await producer.init();
  }, 180_000);

  afterAll(async () => {
    await producer?.close();
    await client?.close();
    await consumer?.close();
    await broker?.stop();
    if (pool !== undefined) {
      await pool.query(`DROP TABLE IF EXISTS ${tables.orders}, ${tables.shipments}`);
      await pool.end();
    }
    await rm(root, { recursive: true, force: true });
  }, 60_000);

  it('ships each committed order once, even when the relay publishes its event twice', async () => {
    if (unavailable !== undefined) return;
    const start = applied.count;
    const replayedBefore = replayed.count;
    deliveries = 0;
    seen.clear();
    carried.length = 0;
    const orders = producer.get(Orders);
    const ids = Array.from({ length: 20 }, (_, i) => `${transport.name}-order-${i}`);
    const results = await Promise.all(ids.map((id, i) => orders.place({ id, pence: 100 + i })));
    await applied.until(start + ids.length);
    expect(deliveries).toBe(ids.length);
    // On NATS and RabbitMQ the event id also travels as a transport header.
    expect(carried).toEqual(carried.map(({ id }) => ({ id, ...transport.headers(id) })));
    expect(carried.map((c) => c.id).sort()).toEqual(results.map((r) => r.eventId).sort());

    // Crash point 3 by hand: the first half is published again, as after a relay that died before marking them sent.
    const again = results.slice(0, 10).map((r) => r.eventId);
    await pool.query(
      `UPDATE ${outboxTable} SET state = 'pending', sent_at = NULL, available_at = 0 WHERE id = ANY($1)`,
      [again],
    );
    producer.get(Outbox).relay?.wake();
    await replayed.until(replayedBefore + again.length);
    expect(deliveries).toBe(ids.length);

    const { rows } = await pool.query(
      `SELECT order_id, count(*)::int AS n FROM ${tables.shipments} GROUP BY order_id ORDER BY order_id`,
    );
    expect(rows).toHaveLength(ids.length);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(applied.count - start).toBe(ids.length);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
  }, 60_000);

  const { headerOnly } = transport;
  if (headerOnly !== undefined)
    it('keys an idempotent consumer on the transport header when the payload is no envelope', async () => {
      if (unavailable !== undefined) return;
      const before = { plain: plain.count, executed: plainExecuted.count, replayed: replayed.count };
      const message = headerOnly(`${transport.name}-plain-1`, { orderId: 'plain-1' });
      await lastValueFrom(client.emit('order.plain', message), { defaultValue: undefined });
      // The duplicate is sent once the first run's key is completed, so it is replayed, not refused as in progress.
      await plainExecuted.until(before.executed + 1);
      await lastValueFrom(client.emit('order.plain', message), { defaultValue: undefined });
      await replayed.until(before.replayed + 1);
      expect(plain.count - before.plain).toBe(1);
    }, 60_000);
});
