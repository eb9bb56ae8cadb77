import { Body, Controller, Injectable, Post } from '@nestjs/common';
import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { Idempotent, Outbox, PostgresIdempotencyStore, PostgresOutboxStore } from '../../lib';
import { VirtualClock } from '../../lib/kernel/clock';
import { RunningApp, send, startApp } from '../idempotency/http-kit';
import { serverOrSkip } from '../support/server-env';
import { tableName } from './outbox-kit';
import { ORM_CASES, OrmDatabases } from './orm-cases';

/** Table names of the running test. */
const tables = { orders: '', customers: '', outbox: '', keys: '' };

interface OrderBody {
  readonly id: string;
  /** The customer; one that does not exist fails the deferred foreign key at COMMIT. */
  readonly customer?: number;
  /** Throw after the order and its event were written. */
  readonly fail?: boolean;
}

describe.each(ORM_CASES)(
  '@Idempotent({ transactional: true }) joins the @nestjs-cls/transactional transaction ($name)',
  (orm) => {
    const url = serverOrSkip('postgres');
    if (url === undefined) return;

    /** Writes an order through the ORM and adds its event; what it saw of that event through the ORM is kept. */
    @Injectable()
    class Orders {
      /** How many rows of its own event each run saw through the ORM's transaction. */
      readonly seen: number[] = [];

      constructor(
        private readonly txHost: TransactionHost,
        private readonly outbox: Outbox,
      ) {}

      @Idempotent({ transactional: true, key: (order: OrderBody) => order.id })
      @Transactional()
      async place(order: OrderBody): Promise<{ eventId: string }> {
        return this.write(order);
      }

      /** An outer transaction the keyed method runs in; it fails after the method returned when `failAfter`. */
      @Transactional()
      async checkout(order: OrderBody, failAfter: boolean): Promise<{ eventId: string }> {
        const placed = await this.place(order);
        if (failAfter) throw new Error('checkout failed');
        return placed;
      }

      async write(order: OrderBody): Promise<{ eventId: string }> {
        const tx = this.txHost.tx;
        await orm.query(tx, `INSERT INTO ${tables.orders} (id, customer) VALUES ($1, $2)`, [
          order.id,
          order.customer ?? 1,
        ]);
        const eventId = await this.outbox.add('order.placed', { orderId: order.id }, { key: order.id });
        const rows = await orm.query(tx, `SELECT id FROM ${tables.outbox} WHERE id = $1`, [eventId]);
        this.seen.push(rows.length);
        if (order.fail) throw new Error('payment declined');
        return { eventId };
      }
    }

    @Controller('orders')
    class OrdersController {
      constructor(private readonly orders: Orders) {}

      @Post()
      @Idempotent({ transactional: true })
      @Transactional()
      place(@Body() body: OrderBody): Promise<{ eventId: string }> {
        return this.orders.write(body);
      }
    }

    const databases = new OrmDatabases(url);
    const { pool } = databases;
    let running: RunningApp;
    let orders: Orders;
    let store: PostgresIdempotencyStore;

    beforeAll(() => databases.open());
    afterAll(() => databases.close());
    beforeEach(async () => {
      tables.orders = tableName('orders');
      tables.customers = tableName('customers');
      tables.outbox = tableName();
      tables.keys = tableName('keys');
      await pool.query(
        `CREATE TABLE ${tables.customers} (id int PRIMARY KEY); INSERT INTO ${tables.customers} VALUES (1)`,
      );
      // Checked at COMMIT: an order naming a missing customer is written, and its transaction then fails.
      await pool.query(
        `CREATE TABLE ${tables.orders} (id text PRIMARY KEY, customer int NOT NULL REFERENCES ${tables.customers} (id) DEFERRABLE INITIALLY DEFERRED)`,
      );
      store = new PostgresIdempotencyStore({ pool, table: tables.keys });
      running = await startApp(
        {
          clock: new VirtualClock(),
          idempotency: { store, principal: () => 'shop' },
          outbox: {
            store: new PostgresOutboxStore({ pool, table: tables.outbox }),
            publisher: async () => undefined,
            relay: { enabled: false },
          },
        },
        {
          imports: [ClsModule.forRoot({ global: true, middleware: { mount: true }, plugins: [databases.plugin(orm)] })],
          controllers: [OrdersController],
          providers: [Orders],
        },
      );
      orders = running.app.get(Orders);
    });
    afterEach(async () => {
      await running.close();
      await pool.query(`DROP TABLE IF EXISTS ${Object.values(tables).join(', ')}`);
    });

    const committed = async () => ({
      orders: (await pool.query(`SELECT id FROM ${tables.orders} ORDER BY id`)).rows.map((r) => r.id as string),
      events: (await pool.query(`SELECT key FROM ${tables.outbox} ORDER BY key`)).rows.map((r) => r.key as string),
    });
    const callKey = (id: string) => store.get(JSON.stringify([null, 'CALL', 'Orders.place', id]));
    const routeKey = (id: string) => store.get(JSON.stringify(['shop', 'POST', '/orders', id]));

    it('commits the order, its event and the completed key together, in one transaction', async () => {
      const { eventId } = await orders.place({ id: 'o-1' });
      expect(orders.seen).toEqual([1]);
      expect(await committed()).toEqual({ orders: ['o-1'], events: ['o-1'] });
      expect(await callKey('o-1')).toMatchObject({
        state: 'completed',
        response: { kind: 'result', value: { eventId } },
      });
      // The duplicate replays the stored answer and writes nothing.
      expect(await orders.place({ id: 'o-1' })).toEqual({ eventId });
      expect(orders.seen).toEqual([1]);
    });

    it('commits nothing and frees the key when the method throws', async () => {
      await expect(orders.place({ id: 'o-2', fail: true })).rejects.toThrow('payment declined');
      expect(await committed()).toEqual({ orders: [], events: [] });
      expect(await callKey('o-2')).toBeUndefined();
    });

    it('commits nothing and frees the key when COMMIT fails', async () => {
      await expect(orders.place({ id: 'o-3', customer: 2 })).rejects.toThrow();
      expect(orders.seen).toEqual([1]);
      expect(await committed()).toEqual({ orders: [], events: [] });
      expect(await callKey('o-3')).toBeUndefined();
    });

    it('over HTTP, commits all three on success and nothing on failure', async () => {
      const placed = await send(running.url, '/orders', { key: 'k-1', body: { id: 'o-4' } });
      expect(placed.status).toBe(201);
      const failed = await send(running.url, '/orders', { key: 'k-2', body: { id: 'o-5', fail: true } });
      expect(failed.status).toBe(500);
      expect(orders.seen).toEqual([1, 1]);
      expect(await committed()).toEqual({ orders: ['o-4'], events: ['o-4'] });
      expect(await routeKey('k-1')).toMatchObject({ state: 'completed', response: { status: 201, body: placed.text } });
      expect(await routeKey('k-2')).toBeUndefined();
      expect(running.outcomes.map((o) => o.outcome)).toEqual(['executed', 'released']);
    });

    it('joins a transaction already active: nothing commits when that transaction rolls back after the method', async () => {
      await expect(orders.checkout({ id: 'o-6' }, true)).rejects.toThrow('checkout failed');
      expect(await committed()).toEqual({ orders: [], events: [] });
      expect(await callKey('o-6')).toMatchObject({ state: 'in_progress' });
      await orders.checkout({ id: 'o-7' }, false);
      expect(await committed()).toEqual({ orders: ['o-7'], events: ['o-7'] });
      expect(await callKey('o-7')).toMatchObject({ state: 'completed' });
    });
  },
);
