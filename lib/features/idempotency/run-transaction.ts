import type { EventEmitter } from 'node:events';
import { HeldClsTransaction, TransactionHostLike } from '../transaction/cls-transaction';
import { sqlRowsOf } from '../transaction/sql-runner';
import { StoreCallBounds, boundedStoreCall } from './store-call';
import { PostgresPoolClient, PostgresQueryable, TransactionalIdempotencyStore } from './transactional-store';

/** The database transaction a transactional run holds from its start to its settling. */
export interface RunTransaction {
  /** What the method writes through: `idempotencyTransaction()` gives it, `Outbox.add` joins it. */
  readonly handle: unknown;
  /** Runs SQL in the transaction: the key is completed there. */
  readonly queryable: PostgresQueryable;
  /** Runs `fn` (the method) where the transaction is the active one. */
  enter<R>(fn: () => R): R;
  /** Commits; rejects when the commit failed. */
  commit(): Promise<void>;
  /** Rolls back; rejects when the rollback failed. */
  rollback(): Promise<void>;
  /** Lets go of a transaction in an unknown state (its commit, rollback or a statement failed): it is not committed. */
  abandon(error: Error): void;
}

/**
 * Opens the transaction of a transactional run: through the application's
 * `@nestjs-cls/transactional` `TransactionHost` when there is one, so the
 * method's ORM writes and `@Transactional()` methods join it, else on a
 * connection of the store's own `pg` pool. Bounded by `storeTimeout`; a
 * transaction that opens after the bound passed is ended unused.
 *
 * @param name - `Class.method`, for errors
 */
export async function openRunTransaction(
  bounds: StoreCallBounds,
  name: string,
  store: TransactionalIdempotencyStore,
  host: TransactionHostLike | undefined,
): Promise<RunTransaction> {
  if (host !== undefined) {
    const opening = Promise.resolve().then(() => HeldClsTransaction.open(host, `@Idempotent on ${name}`));
    try {
      return clsTransaction(await boundedStoreCall(bounds, name, 'BEGIN', () => opening), name);
    } catch (error) {
      opening.then(
        (late) => late.rollback().catch(() => undefined),
        () => undefined,
      );
      throw error;
    }
  }
  const connecting = Promise.resolve().then(() => store.connect());
  try {
    const client = await boundedStoreCall(bounds, name, 'connect', () => connecting);
    hearErrors(client);
    await boundedStoreCall(bounds, name, 'BEGIN', () => client.query('BEGIN'));
    return pgTransaction(client);
  } catch (error) {
    // A connection that arrives after the bound passed is discarded too.
    connecting.then(
      (client) => giveBack(client, asError(error)),
      () => undefined,
    );
    throw error;
  }
}

/** A transaction of the application's TransactionHost, held open by the run. */
function clsTransaction(held: HeldClsTransaction, name: string): RunTransaction {
  const query = sqlRowsOf(held.tx, `@Idempotent on ${name}`);
  return {
    handle: held.tx,
    queryable: { query },
    enter: (fn) => held.enter(fn),
    commit: () => held.commit(),
    rollback: () => held.rollback(),
    abandon: () => {
      held.rollback().catch(() => undefined);
    },
  };
}

/** A transaction on a connection of the store's pool, inside BEGIN. */
function pgTransaction(client: PostgresPoolClient): RunTransaction {
  return {
    handle: client,
    queryable: client,
    enter: (fn) => fn(),
    commit: async () => {
      await client.query('COMMIT');
      giveBack(client);
    },
    rollback: async () => {
      await client.query('ROLLBACK');
      giveBack(client);
    },
    // The connection's state is unknown: the pool discards it.
    abandon: (error) => giveBack(client, error),
  };
}

/** `error` as an Error, for a pool's release. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** The error listener of each connection a run holds. */
const errorListeners = new WeakMap<PostgresPoolClient, () => void>();

/**
 * Listens for errors on a connection the run has checked out: pg-pool hears
 * only idle ones, and an unheard 'error' (a backend ended by
 * `pg_terminate_backend` or a failover) would end the process. The
 * statement that meets the dead connection fails, so the run rolls back.
 */
function hearErrors(client: PostgresPoolClient): void {
  const emitter = client as PostgresPoolClient & Partial<Pick<EventEmitter, 'on'>>;
  if (typeof emitter.on !== 'function') return;
  const ignore = () => undefined;
  emitter.on('error', ignore);
  errorListeners.set(client, ignore);
}

/** Returns `client` to its pool (discarding it with `error`), without the run's error listener. */
function giveBack(client: PostgresPoolClient, error?: Error): void {
  const listener = errorListeners.get(client);
  if (listener !== undefined) {
    (client as PostgresPoolClient & Pick<EventEmitter, 'removeListener'>).removeListener('error', listener);
    errorListeners.delete(client);
  }
  if (error === undefined) client.release();
  else client.release(error);
}
