import { PostgresQueryResult } from '../features/idempotency/transactional-store';
import { PostgresOutboxStore } from './postgres-outbox-store';

/** A connection that answers each statement a few event-loop turns later, counting how many overlap; the `failing`-th fails. */
function heldConnection(failing = 0) {
  const seen = { inFlight: 0, most: 0, statements: 0 };
  const connection = {
    query: async (): Promise<PostgresQueryResult> => {
      const nth = ++seen.statements;
      seen.inFlight++;
      seen.most = Math.max(seen.most, seen.inFlight);
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
      seen.inFlight--;
      if (nth === failing) throw new Error('connection reset');
      return { rows: [{ state: 'pending' }], rowCount: 1 };
    },
  };
  return { connection, seen };
}

describe('PostgresOutboxStore on a held connection', () => {
  const store = new PostgresOutboxStore({ pool: { query: async () => ({ rows: [], rowCount: 0 }) }, table: 'outbox' });

  it('runs its statements one at a time, as a pg client must be used', async () => {
    const { connection, seen } = heldConnection();
    const onConnection = store.on(connection);
    await Promise.all([
      onConnection.markSent('relay', ['1', '2']),
      onConnection.markFailed('relay', '3', 'Error: refused', 1000, 5),
      onConnection.release('relay', ['4'], 0),
      onConnection.extendLease('relay', ['5'], 30_000),
    ]);
    expect(seen.statements).toBe(4);
    expect(seen.most).toBe(1);
  });

  it('goes on with the next statement after one failed, and hands each caller its own outcome', async () => {
    const { connection, seen } = heldConnection(1);
    const onConnection = store.on(connection);
    const outcomes = await Promise.allSettled([
      onConnection.markFailed('relay', '3', 'Error: refused', 1000, 5),
      onConnection.release('relay', ['4'], 0),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(seen.statements).toBe(2);
    expect(seen.most).toBe(1);
  });
});
