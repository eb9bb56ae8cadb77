export type {
  ClaimOptions,
  ClaimResult,
  CompletedRecord,
  IdempotencyRecord,
  InProgressRecord,
  StoredHttpResponse,
  StoredResponse,
  StoredResult,
} from './idempotency-store';
export { DEFAULT_IDEMPOTENCY_LEASE_MS, DEFAULT_IDEMPOTENCY_TTL_MS, IdempotencyStore, wallClock } from './idempotency-store';
export type { MemoryIdempotencyStoreOptions } from './memory-idempotency-store';
export { MemoryIdempotencyStore } from './memory-idempotency-store';
export type { PostgresIdempotencyStoreOptions, PostgresQueryable, PostgresQueryResult } from './postgres-idempotency-store';
export { DEFAULT_IDEMPOTENCY_TABLE, PostgresIdempotencyStore } from './postgres-idempotency-store';
export type { RedisIdempotencyStoreOptions, RedisScriptClient } from './redis-idempotency-store';
export { DEFAULT_IDEMPOTENCY_REDIS_PREFIX, RedisIdempotencyStore } from './redis-idempotency-store';
