import { Module, Type } from '@nestjs/common';
import { ClsPluginTransactional, TransactionalAdapter } from '@nestjs-cls/transactional';
import { TransactionalAdapterDrizzleOrm } from '@nestjs-cls/transactional-adapter-drizzle-orm';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { sql } from 'drizzle-orm';
import { drizzle, NodePgDatabase } from 'drizzle-orm/node-postgres';
import { Pool, PoolClient } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { inTransaction } from './outbox-kit';

/** An adapter for plain `pg`, as an application writes one: the transaction is a PoolClient inside BEGIN. */
export class TransactionalAdapterPg implements TransactionalAdapter<Pool, PoolClient, Record<string, never>> {
  constructor(readonly connectionToken: unknown) {}

  optionsFactory = (pool: Pool) => ({
    wrapWithTransaction: (
      _options: Record<string, never>,
      fn: () => Promise<unknown>,
      setTx: (client?: PoolClient) => void,
    ) =>
      inTransaction(pool, (client) => {
        setTx(client);
        return fn();
      }),
    getFallbackInstance: () => pool as unknown as PoolClient,
  });
}

export const POOL = Symbol('pool');
export const DATA_SOURCE = Symbol('dataSource');
export const DRIZZLE = Symbol('drizzle');

/** Any adapter the plugin takes. */
export type PluginAdapter = ConstructorParameters<typeof ClsPluginTransactional>[0]['adapter'];

/** How one ORM runs SQL through the active transaction of its `@nestjs-cls/transactional` adapter. */
export interface OrmCase {
  readonly name: string;
  readonly adapter: () => PluginAdapter;
  /** Runs `text` with `$1…$n` on `tx` and gives the rows back. */
  readonly query: (tx: unknown, text: string, values: unknown[]) => Promise<Array<Record<string, unknown>>>;
}

export const ORM_CASES: OrmCase[] = [
  {
    name: 'pg',
    adapter: () => new TransactionalAdapterPg(POOL),
    query: async (tx, text, values) => (await (tx as PoolClient).query(text, values)).rows,
  },
  {
    name: 'TypeORM',
    adapter: () => new TransactionalAdapterTypeOrm({ dataSourceToken: DATA_SOURCE }),
    query: async (tx, text, values) => {
      const result: unknown = await (tx as EntityManager).query(text, values);
      // TypeORM answers an UPDATE or DELETE with [rows, count], anything else with the rows.
      return (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as Array<Record<string, unknown>>;
    },
  },
  {
    name: 'Drizzle',
    adapter: () => new TransactionalAdapterDrizzleOrm({ drizzleInstanceToken: DRIZZLE }),
    query: async (tx, text, values) => {
      const strings = text.split(/\$\d+/);
      const ordered = [...text.matchAll(/\$(\d+)/g)].map((m) => values[Number(m[1]) - 1]);
      const result = await (tx as NodePgDatabase).execute(sql(Object.assign(strings, { raw: strings }), ...ordered));
      return result.rows;
    },
  },
];

/** The database handles of one test: a pg pool, a TypeORM DataSource and a Drizzle database, all on `url`. */
export class OrmDatabases {
  readonly pool: Pool;
  readonly dataSource: DataSource;

  constructor(url: string) {
    this.pool = new Pool({ connectionString: url, max: 8 });
    this.dataSource = new DataSource({ type: 'postgres', url, poolSize: 4 });
  }

  async open(): Promise<void> {
    await this.dataSource.initialize();
  }

  async close(): Promise<void> {
    await this.dataSource.destroy();
    await this.pool.end();
  }

  /** `ClsModule.forRoot` plugins for `orm`, with these handles provided. */
  plugin(orm: OrmCase): ClsPluginTransactional {
    @Module({
      providers: [
        { provide: POOL, useValue: this.pool },
        { provide: DATA_SOURCE, useValue: this.dataSource },
        { provide: DRIZZLE, useValue: drizzle(this.pool) },
      ],
      exports: [POOL, DATA_SOURCE, DRIZZLE],
    })
    class DatabaseModule {}
    return new ClsPluginTransactional({ imports: [DatabaseModule as Type], adapter: orm.adapter() });
  }
}
