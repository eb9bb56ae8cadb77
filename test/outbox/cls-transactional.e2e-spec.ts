import { Injectable, Module } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import {
  ClsPluginTransactional,
  Transactional,
  TransactionalAdapter,
  TransactionHost,
} from '@nestjs-cls/transactional';
import { TransactionalAdapterDrizzleOrm } from '@nestjs-cls/transactional-adapter-drizzle-orm';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { sql } from 'drizzle-orm';
import { drizzle, NodePgDatabase } from 'drizzle-orm/node-postgres';
import { ClsModule } from 'nestjs-cls';
import { Pool, PoolClient } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { Outbox, PostgresOutboxStore, ResilienceModule } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { states, tableName } from './outbox-kit';

/** What the order service writes through its ORM: the order table and the outbox must commit together. */
const tables = { orders: '', outbox: '' };

/** An adapter for plain `pg`, as an application writes one: the transaction is a PoolClient inside BEGIN. */
class TransactionalAdapterPg implements TransactionalAdapter<Pool, PoolClient, Record<string, never>> {
  constructor(readonly connectionToken: unknown) {}

  optionsFactory = (pool: Pool) => ({
    wrapWithTransaction: async (
      _options: Record<string, never>,
      fn: () => Promise<unknown>,
      setTx: (client?: PoolClient) => void,
    ) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        setTx(client);
        const result = await fn();
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    getFallbackInstance: () => pool as unknown as PoolClient,
  });
}

const POOL = Symbol('pool');
const DATA_SOURCE = Symbol('dataSource');
const DRIZZLE = Symbol('drizzle');

/** Any adapter the plugin takes. */
type PluginAdapter = ConstructorParameters<typeof ClsPluginTransactional>[0]['adapter'];

/** How each ORM writes an order through the active transaction. */
interface OrmCase {
  readonly name: string;
  readonly adapter: () => PluginAdapter;
  readonly insertOrder: (tx: unknown, id: string) => Promise<unknown>;
}

const CASES: OrmCase[] = [
  {
    name: 'pg',
    adapter: () => new TransactionalAdapterPg(POOL),
    insertOrder: (tx, id) => (tx as PoolClient).query(`INSERT INTO ${tables.orders} (id) VALUES ($1)`, [id]),
  },
  {
    name: 'TypeORM',
    adapter: () => new TransactionalAdapterTypeOrm({ dataSourceToken: DATA_SOURCE }),
    insertOrder: (tx, id) => (tx as EntityManager).query(`INSERT INTO ${tables.orders} (id) VALUES ($1)`, [id]),
  },
  {
    name: 'Drizzle',
    adapter: () => new TransactionalAdapterDrizzleOrm({ drizzleInstanceToken: DRIZZLE }),
    insertOrder: (tx, id) =>
      (tx as NodePgDatabase).execute(sql`INSERT INTO ${sql.raw(tables.orders)} (id) VALUES (${id})`),
  },
];

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

  let pool: Pool;
  let dataSource: DataSource;
  let moduleRef: TestingModule;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 6 });
    dataSource = new DataSource({ type: 'postgres', url, poolSize: 3 });
    await dataSource.initialize();
    tables.orders = tableName('orders');
    tables.outbox = tableName();
    await pool.query(`CREATE TABLE ${tables.orders} (id text PRIMARY KEY)`);

    @Module({
      providers: [
        { provide: POOL, useValue: pool },
        { provide: DATA_SOURCE, useValue: dataSource },
        { provide: DRIZZLE, useValue: drizzle(pool) },
      ],
      exports: [POOL, DATA_SOURCE, DRIZZLE],
    })
    class DatabaseModule {}

    moduleRef = await Test.createTestingModule({
      imports: [
        ClsModule.forRoot({
          global: true,
          plugins: [new ClsPluginTransactional({ imports: [DatabaseModule], adapter: orm.adapter() })],
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
    await dataSource?.destroy();
    await pool.end();
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
