import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { Pool } from 'pg';
import {
  IdempotencyStore,
  MemoryIdempotencyStore,
  PostgresIdempotencyStore,
  RedisIdempotencyStore,
} from 'resilience4nest';

/**
 * The idempotency store from the environment: PostgreSQL with
 * `DATABASE_URL`, Redis with `REDIS_URL`, else one in memory (fine for a
 * single instance; keys are lost on restart and not shared between pods).
 */
export function idempotencyStoreFromEnv(env: NodeJS.ProcessEnv = process.env): {
  store: IdempotencyStore;
  close: () => Promise<void>;
} {
  const logger = new Logger('IdempotencyStore');
  if (env.DATABASE_URL) {
    const pool = new Pool({ connectionString: env.DATABASE_URL });
    // An idle connection the server drops emits 'error' on the pool; unheard, it would end the process.
    pool.on('error', (error) => logger.warn(`idle PostgreSQL connection lost: ${error.message}`));
    logger.log('idempotency keys in PostgreSQL (DATABASE_URL)');
    return { store: new PostgresIdempotencyStore({ pool }), close: () => pool.end() };
  }
  if (env.REDIS_URL) {
    const client = new Redis(env.REDIS_URL);
    logger.log('idempotency keys in Redis (REDIS_URL)');
    return { store: new RedisIdempotencyStore({ client }), close: async () => void (await client.quit()) };
  }
  return { store: new MemoryIdempotencyStore(), close: async () => undefined };
}
