import { Injectable } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { Outbox, PostgresOutboxStore, ResilienceModule } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { states, tableName } from './outbox-kit';
import { ORM_CASES, OrmDatabases } from './orm-cases';

/** What the order service writes through its ORM: the order table and the outbox must commit together. */
const tables = { orders: '', outbox: '' };

/** How each ORM writes an order through the active transaction. */
const CASES = ORM_CASES.map((orm) => ({
  ...orm,
  insertOrder: (tx: unknown, id: string) => orm.query(tx, `INSERT INTO ${tables.orders} (id) VALUES ($1)`, [id]),
}));

describe.each(CASES)('Outbox.add joins the @nestjs-cls/transactional transaction ($name)', (orm) => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  @Injectable()
  class Orders {
    constructor(
      private readonly txHost: TransactionHost,
      private readonly outbox: Outbox,
    ) {}

    @Transactional()
    async place(id: string, fail = false): Promise<string> {
      await orm.insertOrder(this.txHost.tx, id);
      const eventId = await this.outbox.add('order.created', { orderId: id }, { key: id });
      if (fail) throw new Error('payment declined');
      return eventId;
    }

    /** Outside any transaction: the outbox must refuse rather than commit on its own. */
    async placeWithoutTransaction(id: string): Promise<string> {
      return this.outbox.add('order.created', { orderId: id });
    }
  }

  const databases = new OrmDatabases(url);
  const { pool } = databases;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    await databases.open();
    tables.orders = tableName('orders');
    tables.outbox = tableName();
    await pool.query(`CREATE TABLE ${tables.orders} (id text PRIMARY KEY)`);
    moduleRef = await Test.createTestingModule({
      imports: [
        ClsModule.forRoot({
          global: true,
          plugins: [databases.plugin(orm)],
        }),
        ResilienceModule.forRoot({
          outbox: {
            store: new PostgresOutboxStore({ pool, table: tables.outbox }),
            publisher: async () => undefined,
            relay: { enabled: false },
          },
        }),
      ],
      providers: [Orders],
    }).compile();
    await moduleRef.init();
  });
  afterAll(async () => {
    await moduleRef?.close();
    await pool.query(`DROP TABLE IF EXISTS ${tables.orders}, ${tables.outbox}`);
    await databases.close();
  });

  it('commits the order and its event together, or neither', async () => {
    const orders = moduleRef.get(Orders);
    const eventId = await orders.place('order-1');
    await expect(orders.place('order-2', true)).rejects.toThrow('payment declined');
    const { rows } = await pool.query(`SELECT id FROM ${tables.orders}`);
    expect(rows.map((r) => r.id)).toEqual(['order-1']);
    const events = await pool.query(`SELECT id, key, payload FROM ${tables.outbox}`);
    expect(events.rows).toEqual([{ id: eventId, key: 'order-1', payload: { orderId: 'order-1' } }]);
  });

  it('refuses to add outside a transaction', async () => {
    await expect(moduleRef.get(Orders).placeWithoutTransaction('order-3')).rejects.toMatchObject({
      code: 'OUTBOX_NO_TRANSACTION',
    });
    expect(await states(pool, tables.outbox)).toEqual({ pending: 1 });
  });
});
