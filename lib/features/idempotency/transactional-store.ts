import { IdempotencyStore, StoredResponse } from './idempotency-store';

/** The part of a `pg` query result the store reads. */
export interface PostgresQueryResult {
  /** Result rows keyed by column name. */
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  /** Rows inserted, updated or deleted. */
  readonly rowCount: number | null;
}

/** Anything that runs a parameterized query: a `pg` `Pool`, `Client` or `PoolClient`. */
export interface PostgresQueryable {
  /** Runs `text` with `$1…$n` bound to `values`. */
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>;
}

/** A connection checked out of a pool (a `pg` `PoolClient`). */
export interface PostgresPoolClient extends PostgresQueryable {
  /** Returns the connection to its pool; with an error (or `true`) the pool discards it instead. */
  release(error?: Error | boolean): void;
}

/**
 * A store that can complete a key on a connection inside the caller's
 * transaction, which transactional `@Idempotent` methods need.
 * `PostgresIdempotencyStore` is one.
 */
export interface TransactionalIdempotencyStore extends IdempotencyStore {
  /** Checks out a connection for one transaction. */
  connect(): Promise<PostgresPoolClient>;
  /** Completes the key on `client`, so it commits (or rolls back) with the transaction. */
  completeInTransaction(
    client: PostgresQueryable,
    key: string,
    token: string,
    response: StoredResponse,
    ttlMs?: number,
  ): Promise<boolean>;
}

/** True when `store` can take part in a caller's transaction. */
export function isTransactionalStore(store: IdempotencyStore): store is TransactionalIdempotencyStore {
  const candidate = store as Partial<TransactionalIdempotencyStore>;
  return typeof candidate.connect === 'function' && typeof candidate.completeInTransaction === 'function';
}
