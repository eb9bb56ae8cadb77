export type {
  ClaimOptions,
  ClaimResult,
  CompletedRecord,
  IdempotencyRecord,
  InProgressRecord,
  RecordBase,
  StoredHttpResponse,
  StoredResponse,
  StoredResult,
} from './idempotency-store';
export { DEFAULT_IDEMPOTENCY_LEASE_MS, DEFAULT_IDEMPOTENCY_TTL_MS, IdempotencyStore } from './idempotency-store';
export type { MemoryIdempotencyStoreOptions } from './memory-idempotency-store';
export { MemoryIdempotencyStore } from './memory-idempotency-store';
export type { PostgresQueryable, PostgresQueryResult } from './transactional-store';
export type { PostgresPoolClient, TransactionalIdempotencyStore } from './transactional-store';
export { Idempotent } from './idempotent.decorator';
export { IdempotencyRegistry } from './idempotency.registry';
export type { ProviderLookup } from '../transaction/cls-transaction';
export type { IdempotencyOutcomeEvent } from './idempotency.registry';
export type { IdempotencyOutcome, IdempotencyTransport } from './idempotent-target';
export { downstreamIdempotencyKey, idempotencyTransaction } from './idempotency.context';
export {
  DEFAULT_IDEMPOTENCY_HEADER,
  DEFAULT_MAX_STORED_BYTES,
  DEFAULT_REPLAY_HEADERS,
  DEFAULT_STORE_TIMEOUT_MS,
  IDEMPOTENT_BODY_OMITTED_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
} from './idempotency.options';
export { DEFAULT_MEMORY_STORE_MAX_KEYS } from './memory-idempotency-store';
export type {
  IdempotencyModuleOptions,
  IdempotencyPrincipal,
  IdempotencyReconciler,
  IdempotencyReconciliation,
  IdempotencySettlement,
  IdempotentFingerprint,
  IdempotentKey,
  IdempotentOptions,
  ReconciledHttpAnswer,
  ReconciledResult,
  StaleIdempotencyKey,
} from './idempotency.options';
export type { PlatformRequest, PrincipalResolver } from './platform-request';
export type { IdempotentArgumentReader, IdempotentReaderMismatch } from './idempotent.decorator';
export { MAX_IDEMPOTENCY_KEY_LENGTH } from './idempotency-key';
