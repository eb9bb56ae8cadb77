import { Clock } from '../../kernel/clock';
import { SqlRunner } from '../transaction/sql-runner';
import { OutboxEvent, OutboxRow, OutboxStats } from './outbox.types';

/** One row to write, as `Outbox.add` made it. */
export interface NewOutboxRow {
  /** The event id. */
  readonly id: string;
  /** The topic. */
  readonly topic: string;
  /** The ordering key, or null. */
  readonly key: string | null;
  /** The payload as JSON text. */
  readonly payload: string;
  /** The headers as JSON text. */
  readonly headers: string;
}

/** What a relay holds: rows it leased, until it marks them. */
export interface ClaimedRow extends OutboxEvent {
  /** Position in the table, in insertion (per key: commit) order. */
  readonly seq: string;
  /** Failed relay passes before this one. */
  readonly attempts: number;
}

/** What marking a failed row did. */
export type FailedRowState = 'pending' | 'parked' | 'lost';

/** A listening connection; `close` stops it. */
export interface OutboxListener {
  /** The same table with its statements run on the listening connection, held out of the pool. */
  readonly store: OutboxStore;
  /** Stops listening and gives the connection back. */
  close(): void;
}

/** Which sent events {@link OutboxStore.replay} puts back in line: every condition given holds. */
export interface OutboxReplaySelection {
  /** Only these event ids. */
  readonly ids?: readonly string[];
  /** Only events of this topic. */
  readonly topic?: string;
  /** Only events added at or after this time, in ms since the epoch. */
  readonly since?: number;
}

/**
 * Where the outbox keeps its events: what `Outbox` and the relay need of a
 * table. `PostgresOutboxStore` is the adapter the library ships. Times are
 * absolute milliseconds from the store's clock.
 */
export interface OutboxStore {
  /** The clock of the times written into rows. */
  readonly clock: Clock;
  /** Creates the table if it does not exist. */
  ensureSchema(): Promise<void>;
  /** Writes `row` through `run`, on the caller's transaction; with `notify`, listening relays wake on commit. */
  insert(run: SqlRunner, row: NewOutboxRow, notify: boolean): Promise<void>;
  /** Leases up to `limit` due rows (first of their ordering key) to `owner` for `leaseMs`. */
  claim(owner: string, limit: number, leaseMs: number): Promise<ClaimedRow[]>;
  /** Extends to `leaseMs` from now the lease of the `seqs` that `owner` still holds; returns how many. */
  extendLease(owner: string, seqs: readonly string[], leaseMs: number): Promise<number>;
  /** Marks `seqs` sent where `owner` still holds them; returns how many. */
  markSent(owner: string, seqs: readonly string[]): Promise<number>;
  /** Records a failed publish: due again after `retryInMs`, or parked after `maxAttempts`. */
  markFailed(
    owner: string,
    seq: string,
    error: string,
    retryInMs: number,
    maxAttempts: number,
  ): Promise<FailedRowState>;
  /** Gives rows back without counting an attempt, due again after `delayMs`. */
  release(owner: string, seqs: readonly string[], delayMs: number): Promise<void>;
  /** Puts a parked event back in line, its attempts reset; false when no parked event has that id. */
  requeue(id: string): Promise<boolean>;
  /** Puts the sent events `selection` names back in line (attempts reset), keeping their order; returns how many. */
  replay(selection: OutboxReplaySelection): Promise<number>;
  /** Parked events, oldest first. */
  parked(limit?: number): Promise<OutboxRow[]>;
  /** One event by id, in any state. */
  find(id: string): Promise<OutboxRow | undefined>;
  /** Pending and parked counts and the age of the oldest pending event. */
  stats(): Promise<OutboxStats>;
  /** Deletes sent events older than `retentionMs`; returns how many. */
  deleteSent(retentionMs: number): Promise<number>;
  /** Listens for committed events; `onError` hears when the listening connection fails. */
  listen(onEvent: () => void, onError: (error: unknown) => void): Promise<OutboxListener>;
}

/** Whether `value` has the methods of an {@link OutboxStore}. */
export function isOutboxStore(value: unknown): value is OutboxStore {
  if (value === null || typeof value !== 'object') return false;
  const candidate = value as Record<string, unknown>;
  return ['ensureSchema', 'insert', 'claim', 'extendLease', 'markSent', 'markFailed', 'release', 'listen'].every(
    (method) => typeof candidate[method] === 'function',
  );
}
