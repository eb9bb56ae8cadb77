import { Logger } from '@nestjs/common';
import { Pool } from 'pg';

/** Injection token of the shop's own database. */
export const SHOP_DATABASE = 'SHOP_DATABASE';

/** The shop's own tables: captured payments and the shipments they start. */
const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS shop_payments (payment_id text PRIMARY KEY, charge_id text NOT NULL, amount integer NOT NULL)',
  // No unique constraint on purpose: a second shipment for one payment would show here, so only idempotency prevents it.
  'CREATE TABLE IF NOT EXISTS shop_shipments (id serial PRIMARY KEY, payment_id text NOT NULL)',
];

/** The shop's database: a `pg` pool, or none (payments are then not recorded and no event is published). */
export interface ShopDatabase {
  readonly pool: Pool | undefined;
  /** Creates the shop's tables if they do not exist. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/** A database on `pool` (none when `undefined`). */
export function shopDatabase(pool: Pool | undefined): ShopDatabase {
  return {
    pool,
    migrate: async () => {
      if (pool === undefined) return;
      for (const statement of SCHEMA) await pool.query(statement);
    },
    close: async () => pool?.end(),
  };
}

/** The shop's database from `DATABASE_URL`; without it the shop runs with no database. */
export function shopDatabaseFromEnv(env: NodeJS.ProcessEnv = process.env): ShopDatabase {
  if (!env.DATABASE_URL) return shopDatabase(undefined);
  const pool = new Pool({ connectionString: env.DATABASE_URL });
  const logger = new Logger('ShopDatabase');
  // An idle connection the server drops emits 'error' on the pool; unheard, it would end the process.
  pool.on('error', (error) => logger.warn(`idle PostgreSQL connection lost: ${error.message}`));
  return shopDatabase(pool);
}
