import { createHash } from 'node:crypto';
import { Clock } from '../kernel/clock';
import { wallClock } from '../features/idempotency/idempotency-store';
import {
  PostgresPoolClient,
  PostgresQueryable,
  PostgresQueryResult,
} from '../features/idempotency/transactional-store';
import { INVALID_OUTBOX_TABLE, OUTBOX_SCHEMA_MISMATCH, POOL_CANNOT_CONNECT } from '../features/outbox/outbox.messages';
import {
  ClaimedRow,
  FailedRowState,
  NewOutboxRow,
  OutboxListener,
  OutboxReplaySelection,
  OutboxStore,
} from '../features/outbox/outbox-store';
import { OutboxEventState, OutboxRow, OutboxStats } from '../features/outbox/outbox.types';
import { SqlRunner } from '../features/transaction/sql-runner';
import { listenForPoolErrors, processWarning, StoreWarn } from './pool-errors';

/** Table used when the `table` option is not given. */
export const DEFAULT_OUTBOX_TABLE = 'resilience4nest_outbox';

/** Options of {@link PostgresOutboxStore}. */
export interface PostgresOutboxStoreOptions {
  /** A `pg` `Pool`: the relay claims, marks and deletes rows through it, and LISTENs on one of its connections. */
  readonly pool: PostgresQueryable;
  /** Table name, optionally schema-qualified; default {@link DEFAULT_OUTBOX_TABLE}. */
  readonly table?: string;
  /** Wall-clock time written into rows (occurred, due, leased, sent); shared by every process. Default `Date.now`. */
  readonly clock?: Clock;
  /**
   * Where the failure of one of the pool's idle connections is reported, once per episode. Default a Node process
   * warning. Stores of one kind sharing a pool report through the first one's.
   */
  readonly warn?: StoreWarn;
}

const RETENTION_BATCH = 1000;

interface Row {
  seq: string;
  id: string;
  topic: string;
  key: string | null;
  payload: unknown;
  headers: unknown;
  occurred_at: string;
  attempts: number;
  state?: string;
  last_error?: string | null;
  sent_at?: string | null;
}

/**
 * The outbox table on PostgreSQL. `Outbox.add` writes rows on the caller's
 * transaction; the relay claims due rows with `FOR UPDATE SKIP LOCKED`
 * under a lease, so several relays share the work without taking one row
 * twice, and an event with an ordering key is claimable only while no
 * earlier event of that key is pending or parked. Adding an event with a
 * key holds a transaction-scoped advisory lock on the key until commit, so
 * per key the insertion order is the commit order.
 *
 * Times are absolute milliseconds from the store's clock (a wall clock
 * shared by every process).
 */
export class PostgresOutboxStore implements OutboxStore {
  /** The `pg` pool the relay uses. */
  readonly pool: PostgresQueryable;
  /** The clock of the times written into rows. */
  readonly clock: Clock;
  /** The LISTEN/NOTIFY channel of this table. */
  readonly channel: string;
  private readonly tableName: string;
  private readonly table: string;
  private readonly schema: string;
  private readonly lockClass: number;
  private readonly sql: ReturnType<typeof statements>;

  /** @param options - the pool, table and clock */
  constructor(options: PostgresOutboxStoreOptions) {
    const table = options.table ?? DEFAULT_OUTBOX_TABLE;
    this.pool = options.pool;
    this.clock = options.clock ?? wallClock;
    this.tableName = table;
    this.table = quoteTable(table);
    this.schema = PostgresOutboxStore.schemaSql(table);
    this.channel = channelOf(table);
    this.lockClass = digestInt(`resilience4nest:outbox:${table}`, 0);
    this.sql = statements(this.table);
    // Without a listener, a pooled connection terminated by the server would end the process.
    listenForPoolErrors(options.pool, 'PostgresOutboxStore', options.warn ?? processWarning);
  }

  /**
   * The DDL of the outbox table and its indexes (idempotent:
   * `IF NOT EXISTS`), for a migration when the module option `createSchema` is false.
   */
  static schemaSql(table: string = DEFAULT_OUTBOX_TABLE): string {
    const quoted = quoteTable(table);
    const base = table.split('.').pop() as string;
    const index = (suffix: string) => quoteIdent(`${base}_${suffix}`);
    return [
      `CREATE TABLE IF NOT EXISTS ${quoted} (`,
      `  seq bigserial PRIMARY KEY,`,
      `  id text NOT NULL UNIQUE,`,
      `  topic text NOT NULL,`,
      `  key text,`,
      `  payload json NOT NULL,`,
      `  headers json NOT NULL,`,
      `  occurred_at bigint NOT NULL,`,
      `  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'parked')),`,
      `  attempts integer NOT NULL DEFAULT 0,`,
      `  available_at bigint NOT NULL,`,
      `  lease_owner text,`,
      `  sent_at bigint,`,
      `  last_error text`,
      `);`,
      `CREATE INDEX IF NOT EXISTS ${index('pending_idx')} ON ${quoted} (seq) WHERE state = 'pending';`,
      `CREATE INDEX IF NOT EXISTS ${index('key_idx')} ON ${quoted} (key, seq) WHERE state <> 'sent' AND key IS NOT NULL;`,
      `CREATE INDEX IF NOT EXISTS ${index('sent_idx')} ON ${quoted} (sent_at) WHERE state = 'sent';`,
      `CREATE INDEX IF NOT EXISTS ${index('open_idx')} ON ${quoted} (state, occurred_at) WHERE state <> 'sent';`,
    ].join('\n');
  }

  /**
   * The same table with every statement run on `connection` (a connection
   * held out of the pool) instead of the pool: what the relay uses, on its
   * listening connection, so it never waits for a connection the
   * application's transactions hold. The statements run one at a time, in
   * the order they were asked, as a `pg` client must be used: one that
   * fails does not hold up the next.
   */
  on(connection: PostgresQueryable): PostgresOutboxStore {
    return new PostgresOutboxStore({ pool: oneAtATime(connection), table: this.tableName, clock: this.clock });
  }

  /** Creates the table if it does not exist (serialized across processes by an advisory lock). */
  async ensureSchema(): Promise<void> {
    await this.pool.query(`SELECT pg_advisory_xact_lock(${this.lockClass}, 0);\n${this.schema}`);
  }

  /**
   * Writes `row` through `run`, on the caller's transaction. With `notify`,
   * relays LISTENing on the table are woken when the transaction commits.
   */
  async insert(run: SqlRunner, row: NewOutboxRow, notify: boolean): Promise<void> {
    const now = Math.floor(this.clock.now());
    const values = [row.id, row.topic, row.key, row.payload, row.headers, now, this.lockClass];
    if (notify) await run(this.sql.insertNotify, [...values, this.channel]);
    else await run(this.sql.insert, values);
  }

  /**
   * Leases up to `limit` due rows to `owner` until `now + leaseMs`: rows
   * that are pending, not leased (or whose lease ran out), and first of
   * their ordering key.
   */
  async claim(owner: string, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
    const now = Math.floor(this.clock.now());
    const { rows } = await this.query(this.sql.claim, [now, limit, now + leaseMs, owner]);
    return (rows as unknown as Row[]).map(toClaimed).sort((a, b) => compareSeq(a.seq, b.seq));
  }

  /** Extends to `leaseMs` from now the lease of the `seqs` that `owner` still holds; returns how many. */
  async extendLease(owner: string, seqs: readonly string[], leaseMs: number): Promise<number> {
    if (seqs.length === 0) return 0;
    const now = Math.floor(this.clock.now());
    const result = await this.query(this.sql.extendLease, [seqs, owner, now + leaseMs]);
    return result.rowCount ?? 0;
  }

  /** Marks `seqs` sent, where `owner` still holds them; returns how many it marked. */
  async markSent(owner: string, seqs: readonly string[]): Promise<number> {
    if (seqs.length === 0) return 0;
    const now = Math.floor(this.clock.now());
    const result = await this.query(this.sql.markSent, [seqs, owner, now]);
    return result.rowCount ?? 0;
  }

  /**
   * Records a failed publish of `seq`: due again after `retryInMs`, or
   * parked once it has failed `maxAttempts` times. `error` is the error's
   * class and message (never the payload). `lost` when `owner` no longer holds the row.
   */
  async markFailed(
    owner: string,
    seq: string,
    error: string,
    retryInMs: number,
    maxAttempts: number,
  ): Promise<FailedRowState> {
    const now = Math.floor(this.clock.now());
    const { rows } = await this.query(this.sql.markFailed, [seq, owner, now + retryInMs, error, maxAttempts]);
    return rows.length === 0 ? 'lost' : (rows[0].state as FailedRowState);
  }

  /** Gives rows back without counting an attempt (the publish never left), due again at `now + delayMs`. */
  async release(owner: string, seqs: readonly string[], delayMs: number): Promise<void> {
    if (seqs.length === 0) return;
    const now = Math.floor(this.clock.now());
    await this.query(this.sql.release, [seqs, owner, now + delayMs]);
  }

  /** Puts a parked event back in line, its attempts reset. False when no parked event has that id. */
  async requeue(id: string): Promise<boolean> {
    if (!storableText(id)) return false;
    const now = Math.floor(this.clock.now());
    const result = await this.query(this.sql.requeue, [id, now]);
    return result.rowCount === 1;
  }

  /**
   * Puts the sent events `selection` names back in line, attempts reset:
   * they keep their place (`seq`), so per key they go out in their order again.
   */
  async replay(selection: OutboxReplaySelection): Promise<number> {
    const ids = selection.ids?.filter(storableText);
    if (ids?.length === 0) return 0;
    const now = Math.floor(this.clock.now());
    const result = await this.query(this.sql.replay, [
      ids ?? null,
      selection.topic ?? null,
      selection.since === undefined ? null : Math.floor(selection.since),
      now,
    ]);
    return result.rowCount ?? 0;
  }

  /** Parked events, oldest first. */
  async parked(limit = 100): Promise<OutboxRow[]> {
    const { rows } = await this.query(this.sql.parked, [limit]);
    return (rows as unknown as Row[]).map(toOutboxRow);
  }

  /** One event by id, in any state. */
  async find(id: string): Promise<OutboxRow | undefined> {
    if (!storableText(id)) return undefined;
    const { rows } = await this.query(this.sql.find, [id]);
    return rows.length === 0 ? undefined : toOutboxRow(rows[0] as unknown as Row);
  }

  /** Pending and parked counts and the age of the oldest pending event. */
  async stats(): Promise<OutboxStats> {
    const now = Math.floor(this.clock.now());
    const { rows } = await this.query(this.sql.stats, []);
    const row = rows[0] as { pending: string; parked: string; oldest: string | null };
    return {
      pending: Number(row.pending),
      parked: Number(row.parked),
      oldestPendingAgeMs: row.oldest === null ? 0 : Math.max(0, now - Number(row.oldest)),
    };
  }

  /** Deletes sent events older than `retentionMs`, `RETENTION_BATCH` per statement; returns how many. */
  async deleteSent(retentionMs: number): Promise<number> {
    const before = Math.floor(this.clock.now()) - retentionMs;
    let deleted = 0;
    for (;;) {
      const result = await this.query(this.sql.deleteSent, [before, RETENTION_BATCH]);
      const count = result.rowCount ?? 0;
      deleted += count;
      if (count < RETENTION_BATCH) return deleted;
    }
  }

  /** Runs one of the table's statements; a table or column missing is said as such, naming the table. */
  private async query(text: string, values: unknown[]): Promise<PostgresQueryResult> {
    try {
      return await this.pool.query(text, values);
    } catch (error) {
      const missing = schemaMismatch(error);
      if (missing === undefined) throw error;
      throw new Error(OUTBOX_SCHEMA_MISMATCH(this.tableName, missing), { cause: error });
    }
  }

  /**
   * LISTENs for committed events on a connection of the pool; `onError`
   * hears when the connection fails (the listener is then closed).
   */
  async listen(onEvent: () => void, onError: (error: unknown) => void): Promise<OutboxListener> {
    const pool = this.pool as PostgresQueryable & { connect?: () => Promise<PostgresPoolClient> };
    if (typeof pool.connect !== 'function') throw new Error(POOL_CANNOT_CONNECT());
    const client = (await pool.connect()) as PostgresPoolClient & NotifyingClient;
    let closed = false;
    const close = (error?: Error) => {
      if (closed) return;
      closed = true;
      client.off('notification', onNotification);
      client.off('error', onClientError);
      client.release(error ?? true);
    };
    const onNotification = (message: { channel: string }) => {
      if (message.channel === this.channel) onEvent();
    };
    const onClientError = (error: Error) => {
      close(error);
      onError(error);
    };
    client.on('notification', onNotification);
    client.on('error', onClientError);
    try {
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch (error) {
      close(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    return { store: this.on(client), close: () => close() };
  }
}

interface NotifyingClient {
  on(event: 'notification', listener: (message: { channel: string }) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  off(event: 'notification', listener: (message: { channel: string }) => void): void;
  off(event: 'error', listener: (error: Error) => void): void;
}

function statements(table: string) {
  const columns = 'seq, id, topic, key, payload, headers, occurred_at, attempts';
  // Parameters: $1 id, $2 topic, $3 key, $4 payload, $5 headers, $6 now, $7 lock class, $8 channel.
  // The key's advisory lock is held to commit, so a later transaction adding to the same key takes its seq after this one commits.
  const insert = (notify: boolean) =>
    `WITH key_lock AS (SELECT pg_advisory_xact_lock($7::int4, hashtext($3::text)))` +
    (notify ? `, wake AS (SELECT pg_notify($8::text, ''))` : '') +
    ` INSERT INTO ${table} (id, topic, key, payload, headers, occurred_at, available_at)` +
    ` SELECT $1::text, $2::text, $3::text, $4::json, $5::json, $6::bigint, $6::bigint FROM key_lock` +
    (notify ? ', wake' : '');
  return {
    insert: insert(false),
    insertNotify: insert(true),
    claim:
      `WITH due AS (SELECT o.seq FROM ${table} o WHERE o.state = 'pending' AND o.available_at <= $1 ` +
      `AND (o.key IS NULL OR NOT EXISTS (SELECT 1 FROM ${table} p WHERE p.key = o.key AND p.state <> 'sent' AND p.seq < o.seq)) ` +
      `ORDER BY o.seq LIMIT $2 FOR UPDATE SKIP LOCKED) ` +
      `UPDATE ${table} t SET available_at = $3, lease_owner = $4 FROM due WHERE t.seq = due.seq ` +
      `RETURNING t.seq, t.id, t.topic, t.key, t.payload, t.headers, t.occurred_at, t.attempts`,
    extendLease: `UPDATE ${table} SET available_at = $3 WHERE seq = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'pending'`,
    markSent:
      `UPDATE ${table} SET state = 'sent', sent_at = $3, lease_owner = NULL ` +
      `WHERE seq = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'pending'`,
    markFailed:
      `UPDATE ${table} SET attempts = attempts + 1, available_at = $3, lease_owner = NULL, last_error = $4, ` +
      `state = CASE WHEN attempts + 1 >= $5 THEN 'parked' ELSE 'pending' END ` +
      `WHERE seq = $1 AND lease_owner = $2 AND state = 'pending' RETURNING state`,
    release:
      `UPDATE ${table} SET available_at = $3, lease_owner = NULL ` +
      `WHERE seq = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'pending'`,
    requeue:
      `UPDATE ${table} SET state = 'pending', attempts = 0, available_at = $2, lease_owner = NULL ` +
      `WHERE id = $1 AND state = 'parked'`,
    replay:
      `UPDATE ${table} SET state = 'pending', attempts = 0, available_at = $4, lease_owner = NULL, sent_at = NULL, ` +
      `last_error = NULL WHERE state = 'sent' AND ($1::text[] IS NULL OR id = ANY($1::text[])) ` +
      `AND ($2::text IS NULL OR topic = $2::text) AND ($3::bigint IS NULL OR occurred_at >= $3::bigint)`,
    parked: `SELECT ${columns}, state, last_error, sent_at FROM ${table} WHERE state = 'parked' ORDER BY seq LIMIT $1`,
    find: `SELECT ${columns}, state, last_error, sent_at FROM ${table} WHERE id = $1`,
    stats:
      `SELECT count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'parked') AS parked, ` +
      `min(occurred_at) FILTER (WHERE state = 'pending') AS oldest FROM ${table} WHERE state <> 'sent'`,
    deleteSent:
      `DELETE FROM ${table} WHERE seq IN ` +
      `(SELECT seq FROM ${table} WHERE state = 'sent' AND sent_at <= $1 ORDER BY sent_at LIMIT $2)`,
  };
}

/** PostgreSQL's `undefined_table` and `undefined_column`: what the table lacks, or undefined for any other error. */
function schemaMismatch(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === '42P01') return 'does not exist';
  if (code !== '42703') return undefined;
  // PostgreSQL names the column: 'column "lease_owner" does not exist' (or 't.lease_owner').
  const column = typeof message === 'string' ? /column (?:\w+\.)?("?[^" ]+"?) /.exec(message)?.[1] : undefined;
  return `has no column ${column === undefined ? '(one the outbox needs)' : column.startsWith('"') ? column : `"${column}"`}`;
}

/** Whether a `text` column can hold `value`: PostgreSQL refuses NUL in text, so no stored id has one. */
function storableText(value: string): boolean {
  return !value.includes('\0');
}

function toClaimed(row: Row): ClaimedRow {
  return {
    seq: String(row.seq),
    id: row.id,
    topic: row.topic,
    key: row.key,
    payload: row.payload,
    headers: (row.headers ?? {}) as Record<string, string>,
    occurredAt: Number(row.occurred_at),
    attempts: Number(row.attempts),
  };
}

function toOutboxRow(row: Row): OutboxRow {
  return {
    ...toClaimed(row),
    state: row.state as OutboxEventState,
    lastError: row.last_error ?? undefined,
    sentAt: row.sent_at === null || row.sent_at === undefined ? undefined : Number(row.sent_at),
  };
}

function compareSeq(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function quoteIdent(name: string): string {
  return `"${name}"`;
}

function quoteTable(table: string): string {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) throw new Error(INVALID_OUTBOX_TABLE(table));
  return parts.map(quoteIdent).join('.');
}

/** The channel name: the table's, within PostgreSQL's 63-byte identifiers. */
function channelOf(table: string): string {
  const name = `${table.replace('.', '_')}_events`;
  return name.length <= 63 ? name : `outbox_${createHash('sha256').update(table).digest('hex').slice(0, 32)}`;
}

function digestInt(text: string, offset: number): number {
  return createHash('sha256').update(text).digest().readInt32BE(offset);
}

/** `connection` with each statement started once the one before it has settled. */
function oneAtATime(connection: PostgresQueryable): PostgresQueryable {
  let last: Promise<unknown> = Promise.resolve();
  return {
    query: (text, values) => {
      const run = last.then(() => connection.query(text, values));
      last = run.catch(() => undefined);
      return run;
    },
  };
}
