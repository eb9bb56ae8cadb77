import { createHash } from 'node:crypto';
import { Clock } from '../kernel/clock';
import {
  ClaimOptions,
  ClaimResult,
  claimDurations,
  decodeResponse,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  encodeResponse,
  IdempotencyRecord,
  StoredResponse,
  storeDuration,
  wallClock,
} from '../features/idempotency/idempotency-store';
import {
  PostgresPoolClient,
  PostgresQueryable,
  TransactionalIdempotencyStore,
} from '../features/idempotency/transactional-store';
import {
  CLAIM_DID_NOT_SETTLE,
  CORRUPT_RECORD,
  INVALID_TABLE_NAME,
  POOL_CANNOT_CONNECT,
} from '../features/idempotency/idempotency.messages';
import { ownerToken } from '../features/idempotency/owner-token';
import { listenForPoolErrors, processWarning, StoreWarn } from './pool-errors';

const STORE = 'PostgresIdempotencyStore';

/** Table used when the `table` option is not given. */
export const DEFAULT_IDEMPOTENCY_TABLE = 'resilience4nest_idempotency_keys';

/** A claim only loops when the record changes between two statements; a few rounds settle any real race. */
const MAX_CLAIM_ROUNDS = 5;

const CLEANUP_BATCH = 1000;

/** Options of {@link PostgresIdempotencyStore}. */
export interface PostgresIdempotencyStoreOptions {
  /** A `pg` `Pool` (or any {@link PostgresQueryable} that is not inside a transaction). */
  readonly pool: PostgresQueryable;
  /** Table name, optionally schema-qualified; default {@link DEFAULT_IDEMPOTENCY_TABLE}. */
  readonly table?: string;
  /** Source of wall-clock time shared by every process using the table; default the system clock (`Date.now`). */
  readonly clock?: Clock;
  /** Create the table on first use (default true); set false when migrations own it (see {@link PostgresIdempotencyStore.schemaSql}). */
  readonly createSchema?: boolean;
  /**
   * Where the failure of one of the pool's idle connections is reported, once per episode. Default a Node process
   * warning. Stores of one kind sharing a pool report through the first one's.
   */
  readonly warn?: StoreWarn;
}

interface Row {
  fingerprint: string;
  state: string;
  token: string | null;
  created_at: string | number;
  lease_expires_at: string | number | null;
  expires_at: string | number;
  response: string | null;
}

/**
 * Idempotency keys in a PostgreSQL table. A claim is one
 * `INSERT … ON CONFLICT DO NOTHING` on the primary key, so exactly one of
 * any number of concurrent claims wins, across every process using the
 * table, at the cost of a plain insert; a record past its TTL is claimed
 * over by an update that holds only while it is still expired. Times are absolute
 * milliseconds from the store's clock, not the server's, so every process
 * must use a wall clock.
 *
 * With {@link PostgresIdempotencyStore.completeInTransaction} the answer is
 * stored on the transaction that holds the business writes, so both commit
 * or neither does.
 */
export class PostgresIdempotencyStore implements TransactionalIdempotencyStore {
  private readonly pool: PostgresQueryable;
  private readonly clock: Clock;
  private readonly table: string;
  private readonly schema: string;
  private readonly createSchema: boolean;
  private schemaReady: Promise<void> | undefined;
  private readonly sql: ReturnType<typeof statements>;

  /** @param options - the pool, table and clock */
  constructor(options: PostgresIdempotencyStoreOptions) {
    this.pool = options.pool;
    this.clock = options.clock ?? wallClock;
    this.table = quoteTable(options.table ?? DEFAULT_IDEMPOTENCY_TABLE);
    this.schema = PostgresIdempotencyStore.schemaSql(options.table ?? DEFAULT_IDEMPOTENCY_TABLE);
    this.createSchema = options.createSchema ?? true;
    this.sql = statements(this.table);
    // Without a listener, a pooled connection terminated by the server would end the process.
    listenForPoolErrors(options.pool, STORE, options.warn ?? processWarning);
  }

  /**
   * The DDL of the store's table and its expiry index (idempotent:
   * `IF NOT EXISTS`), for a migration when `createSchema` is false.
   */
  static schemaSql(table: string = DEFAULT_IDEMPOTENCY_TABLE): string {
    const quoted = quoteTable(table);
    const index = quoteIdent(`${table.split('.').pop() as string}_expires_at_idx`);
    return [
      `CREATE TABLE IF NOT EXISTS ${quoted} (`,
      `  key text PRIMARY KEY,`,
      `  fingerprint text NOT NULL,`,
      `  state text NOT NULL CHECK (state IN ('in_progress', 'completed')),`,
      `  token text,`,
      `  created_at bigint NOT NULL,`,
      `  lease_expires_at bigint,`,
      `  expires_at bigint NOT NULL,`,
      `  response text`,
      `);`,
      `CREATE INDEX IF NOT EXISTS ${index} ON ${quoted} (expires_at);`,
    ].join('\n');
  }

  /** {@inheritDoc IdempotencyStore#claim} */
  async claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    const { leaseMs, ttlMs } = claimDurations(STORE, options);
    await this.ready();
    const now = Math.floor(this.clock.now());
    for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
      const token = ownerToken();
      const fresh = [key, fingerprint, token, now, now + leaseMs, now + ttlMs];
      const claimed: ClaimResult = {
        outcome: 'claimed',
        token,
        record: {
          key,
          state: 'in_progress',
          fingerprint,
          createdAt: now,
          expiresAt: now + ttlMs,
          leaseExpiresAt: now + leaseMs,
        },
      };
      if ((await this.pool.query(this.sql.claim, fresh)).rowCount === 1) return claimed;
      const found = await this.pool.query(this.sql.get, [key]);
      if (found.rows.length === 0) continue;
      const row = found.rows[0] as unknown as Row;
      const record = toRecord(key, row);
      if (record.expiresAt <= now) {
        if ((await this.pool.query(this.sql.reclaim, fresh)).rowCount === 1) return claimed;
        continue;
      }
      if (record.fingerprint !== fingerprint) return { outcome: 'fingerprint_mismatch' };
      if (record.state === 'completed') return { outcome: 'completed', record };
      if (record.leaseExpiresAt > now)
        return { outcome: 'in_progress', record, retryAfterMs: record.leaseExpiresAt - now };
      const taken = await this.pool.query(this.sql.takeOver, [key, token, now + leaseMs, row.token, now]);
      if (taken.rowCount === 1) return { outcome: 'stale', token, record };
    }
    throw new Error(CLAIM_DID_NOT_SETTLE(STORE, key, MAX_CLAIM_ROUNDS));
  }

  /** {@inheritDoc IdempotencyStore#complete} */
  async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    await this.ready();
    return this.completeOn(this.pool, key, token, response, ttlMs);
  }

  /**
   * Like {@link PostgresIdempotencyStore.complete}, but on `client`, a
   * connection inside the transaction that made the business writes: the
   * key is completed when, and only when, that transaction commits. Returns
   * false when `token` no longer owns the key; roll back then, since another
   * request now owns the operation.
   */
  async completeInTransaction(
    client: PostgresQueryable,
    key: string,
    token: string,
    response: StoredResponse,
    ttlMs?: number,
  ): Promise<boolean> {
    await this.ready();
    return this.completeOn(client, key, token, response, ttlMs);
  }

  /**
   * Checks out a connection of the pool (with the table created), for a
   * transaction whose business writes and {@link PostgresIdempotencyStore.completeInTransaction}
   * commit together. Needs a `pg` `Pool` as `pool`.
   */
  async connect(): Promise<PostgresPoolClient> {
    const pool = this.pool as PostgresQueryable & { connect?: () => Promise<PostgresPoolClient> };
    if (typeof pool.connect !== 'function') throw new Error(POOL_CANNOT_CONNECT());
    await this.ready();
    return pool.connect();
  }

  /** {@inheritDoc IdempotencyStore#release} */
  async release(key: string, token: string): Promise<boolean> {
    await this.ready();
    const result = await this.pool.query(this.sql.release, [key, token]);
    return result.rowCount === 1;
  }

  /** {@inheritDoc IdempotencyStore#renew} */
  async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    const lease = storeDuration(STORE, 'leaseMs', leaseMs, DEFAULT_IDEMPOTENCY_LEASE_MS);
    await this.ready();
    const result = await this.pool.query(this.sql.renew, [key, token, Math.floor(this.clock.now()) + lease]);
    return result.rowCount === 1;
  }

  /** {@inheritDoc IdempotencyStore#get} */
  async get(key: string): Promise<IdempotencyRecord | undefined> {
    await this.ready();
    const found = await this.pool.query(this.sql.get, [key]);
    if (found.rows.length === 0) return undefined;
    const record = toRecord(key, found.rows[0] as unknown as Row);
    return record.expiresAt <= Math.floor(this.clock.now()) ? undefined : record;
  }

  /** {@inheritDoc IdempotencyStore#cleanupExpired} */
  async cleanupExpired(): Promise<number> {
    await this.ready();
    const now = Math.floor(this.clock.now());
    let deleted = 0;
    // Batches keep each DELETE's locks and WAL small on a large table; the loop ends when a batch comes back short.
    for (;;) {
      const result = await this.pool.query(this.sql.cleanup, [now, CLEANUP_BATCH]);
      const count = result.rowCount ?? 0;
      deleted += count;
      if (count < CLEANUP_BATCH) return deleted;
    }
  }

  private async completeOn(
    client: PostgresQueryable,
    key: string,
    token: string,
    response: StoredResponse,
    ttlMs: number | undefined,
  ): Promise<boolean> {
    const ttl = storeDuration(STORE, 'ttlMs', ttlMs, DEFAULT_IDEMPOTENCY_TTL_MS);
    const result = await client.query(this.sql.complete, [
      key,
      token,
      encodeResponse(response),
      Math.floor(this.clock.now()) + ttl,
    ]);
    return result.rowCount === 1;
  }

  private ready(): Promise<void> {
    if (!this.createSchema) return Promise.resolve();
    if (this.schemaReady === undefined) {
      this.schemaReady = this.pool
        .query(`SELECT pg_advisory_xact_lock(${advisoryLockKey(this.table)});\n${this.schema}`)
        .then(
          () => undefined,
          (error: unknown) => {
            // A failed attempt (database not up yet) must not poison every later call.
            this.schemaReady = undefined;
            throw error;
          },
        );
    }
    return this.schemaReady;
  }
}

function statements(table: string) {
  return {
    // The common case, a fresh key, is this one statement; rowCount tells whether it won, so nothing is returned.
    claim:
      `INSERT INTO ${table} (key, fingerprint, state, token, created_at, lease_expires_at, expires_at, response) ` +
      `VALUES ($1, $2, 'in_progress', $3, $4, $5, $6, NULL) ON CONFLICT (key) DO NOTHING`,
    // A row past its TTL is claimed over only while still expired: of several reclaimers the row lock lets one win.
    reclaim:
      `UPDATE ${table} SET fingerprint = $2, state = 'in_progress', token = $3, created_at = $4, lease_expires_at = $5, expires_at = $6, response = NULL ` +
      `WHERE key = $1 AND expires_at <= $4`,
    get: `SELECT fingerprint, state, token, created_at, lease_expires_at, expires_at, response FROM ${table} WHERE key = $1`,
    // Compare-and-set on the token read just before, so of several takers only one wins.
    takeOver:
      `UPDATE ${table} SET token = $2, lease_expires_at = $3, expires_at = GREATEST(expires_at, $3) ` +
      `WHERE key = $1 AND state = 'in_progress' AND token = $4 AND lease_expires_at <= $5`,
    complete:
      `UPDATE ${table} SET state = 'completed', token = NULL, lease_expires_at = NULL, response = $3, expires_at = $4 ` +
      `WHERE key = $1 AND token = $2 AND state = 'in_progress'`,
    release: `DELETE FROM ${table} WHERE key = $1 AND token = $2 AND state = 'in_progress'`,
    renew:
      `UPDATE ${table} SET lease_expires_at = $3, expires_at = GREATEST(expires_at, $3) ` +
      `WHERE key = $1 AND token = $2 AND state = 'in_progress'`,
    cleanup: `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} WHERE expires_at <= $1 LIMIT $2)`,
  };
}

function toRecord(key: string, row: Row): IdempotencyRecord {
  const base = {
    key,
    fingerprint: row.fingerprint,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
  if (row.state === 'completed' && row.response !== null)
    return { ...base, state: 'completed', response: decodeResponse(row.response) };
  if (row.state === 'in_progress' && row.lease_expires_at !== null)
    return { ...base, state: 'in_progress', leaseExpiresAt: Number(row.lease_expires_at) };
  throw new Error(CORRUPT_RECORD(STORE, key));
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function quoteIdent(name: string): string {
  return `"${name}"`;
}

function quoteTable(table: string): string {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) throw new Error(INVALID_TABLE_NAME(table));
  return parts.map(quoteIdent).join('.');
}

/** Two int4 keys from the table name, so concurrent first uses of one table create it once. */
function advisoryLockKey(table: string): string {
  const digest = createHash('sha256').update(`resilience4nest:${table}`).digest();
  return `${digest.readInt32BE(0)}, ${digest.readInt32BE(4)}`;
}
