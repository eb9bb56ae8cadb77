import { loadOptionalPeer, OptionalPeer } from '../../kernel/optional-peer';
import { TX_IS_A_POOL, TX_NOT_IN_TRANSACTION, TX_NOT_SUPPORTED } from './transaction.messages';

/** Runs one parameterized statement (`$1…$n`) on a transaction's connection. */
export type SqlRunner = (text: string, values: unknown[]) => Promise<unknown>;

/** A statement's rows and the count of rows it changed, whichever client ran it. */
export interface SqlRows {
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  readonly rowCount: number;
}

interface DrizzleSql {
  sql: (strings: TemplateStringsArray, ...values: unknown[]) => unknown;
}

const DRIZZLE: OptionalPeer<DrizzleSql> = {
  name: 'drizzle-orm',
  // Loaded on first use, never imported: an absent optional peer fails only the feature that needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('drizzle-orm'),
};

type Candidate = Record<string, unknown> & {
  query?: (text: string, values: unknown[]) => Promise<unknown>;
  execute?: (query: unknown) => Promise<unknown>;
  getTransactionStatus?: () => unknown;
  queryRunner?: { isTransactionActive?: unknown };
};

/**
 * How to run SQL on `tx`, a transaction of one of the supported clients:
 *
 * - a `pg` `Client` / `PoolClient` inside `BEGIN` (also what the pg
 *   adapter of `@nestjs-cls/transactional` and `idempotencyTransaction()` give);
 * - a TypeORM `EntityManager` of a transaction, or a `QueryRunner`;
 * - a Drizzle transaction (`db.transaction(async (tx) => …)`).
 *
 * A pool, a TypeORM `DataSource` or a manager outside a transaction, and a
 * Drizzle database are refused: each statement would commit on its own.
 *
 * @param who - what asks, for messages (`Outbox.add('order.created')`)
 */
export function sqlRunnerOf(tx: unknown, who: string): SqlRunner {
  if (tx === null || typeof tx !== 'object') throw new Error(TX_NOT_SUPPORTED(who, tx));
  const candidate = tx as Candidate;
  if (isPool(candidate)) throw new Error(TX_IS_A_POOL(who));
  if (inTransaction(candidate) === false) throw new Error(TX_NOT_IN_TRANSACTION(who));
  if (typeof candidate.execute === 'function' && typeof candidate.rollback === 'function')
    return drizzleRunner(candidate.execute.bind(candidate));
  if (typeof candidate.query === 'function') {
    const query = candidate.query.bind(candidate);
    return (text, values) => query(text, values);
  }
  throw new Error(TX_NOT_SUPPORTED(who, tx));
}

/**
 * Like {@link sqlRunnerOf} for a transaction given by the caller, which may
 * be a client that never ran `BEGIN`: refused too. When the client cannot
 * tell (an older `pg`, a wrapper, Drizzle), PostgreSQL is asked, at the
 * cost of one statement.
 */
export async function callerSqlRunnerOf(tx: unknown, who: string): Promise<SqlRunner> {
  const run = sqlRunnerOf(tx, who);
  if (inTransaction(tx as Candidate) === undefined) {
    // Inside BEGIN, transaction_timestamp() is when BEGIN arrived and this statement arrived later (µs clock, a
    // round trip apart); outside, this statement is its own transaction and the two are the same instant.
    const { rows } = rowsOf(await run('SELECT transaction_timestamp() <> statement_timestamp() AS in_transaction', []));
    if (rows[0]?.in_transaction !== true) throw new Error(TX_NOT_IN_TRANSACTION(who));
  }
  return run;
}

/**
 * Like {@link sqlRunnerOf}, with each answer read as `pg` gives it: rows
 * and the count of rows changed. TypeORM answers an `UPDATE` or `DELETE`
 * with `[rows, count]` and anything else with the rows alone; `pg` and
 * Drizzle answer with a `pg` result.
 */
export function sqlRowsOf(tx: unknown, who: string): (text: string, values?: unknown[]) => Promise<SqlRows> {
  const run = sqlRunnerOf(tx, who);
  return async (text, values = []) => rowsOf(await run(text, values));
}

function rowsOf(result: unknown): SqlRows {
  if (Array.isArray(result)) {
    if (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
      return { rows: result[0] as SqlRows['rows'], rowCount: result[1] };
    return { rows: result as SqlRows['rows'], rowCount: result.length };
  }
  const { rows = [], rowCount } = (result ?? {}) as { rows?: SqlRows['rows']; rowCount?: number | null };
  return { rows, rowCount: rowCount ?? rows.length };
}

/** A pool or a connection-less ORM handle: statements on it commit one by one. */
function isPool(tx: Candidate): boolean {
  // pg Pool
  if (typeof tx.connect === 'function' && typeof tx.totalCount === 'number') return true;
  // TypeORM DataSource
  if (typeof tx.createQueryRunner === 'function' && 'manager' in tx) return true;
  // TypeORM EntityManager outside a transaction
  if (typeof tx.getRepository === 'function' && 'queryRunner' in tx && tx.queryRunner === undefined) return true;
  return false;
}

/**
 * Whether `tx` is inside a transaction, as the client itself knows it:
 * `pg`'s `getTransactionStatus()` (from the server's last ReadyForQuery:
 * `I` idle, `T` in a transaction, `E` in a failed one), a TypeORM
 * QueryRunner's `isTransactionActive`; undefined when it cannot tell.
 */
function inTransaction(tx: Candidate): boolean | undefined {
  if (typeof tx.getTransactionStatus === 'function') {
    const status = tx.getTransactionStatus();
    if (status === 'I') return false;
    if (status === 'T' || status === 'E') return true;
    return undefined;
  }
  const runner = typeof tx.isTransactionActive === 'boolean' ? tx : tx.queryRunner;
  if (typeof runner?.isTransactionActive === 'boolean') return runner.isTransactionActive;
  return undefined;
}

/** Drizzle takes SQL as its `sql` template: the text is cut at each `$n`, the values put in their places. */
function drizzleRunner(execute: (query: unknown) => Promise<unknown>): SqlRunner {
  const { sql } = loadOptionalPeer(DRIZZLE, 'SQL on a Drizzle transaction');
  return (text, values) => {
    const strings: string[] = [];
    const ordered: unknown[] = [];
    let last = 0;
    for (const match of text.matchAll(/\$(\d+)/g)) {
      strings.push(text.slice(last, match.index));
      ordered.push(values[Number(match[1]) - 1]);
      last = match.index + match[0].length;
    }
    strings.push(text.slice(last));
    return execute(sql(Object.assign(strings, { raw: strings }), ...ordered));
  };
}
