import { EventEmitter } from 'node:events';
import { Pool } from 'pg';
import { PostgresIdempotencyStore } from './postgres-idempotency-store';
import { PostgresOutboxStore } from './postgres-outbox-store';

describe("the stores' watch on their pg pool", () => {
  it('adds one error listener to a pool however many stores use it: Node warns of a leak past ten', async () => {
    const pool = new Pool({ max: 1 });
    try {
      for (let n = 0; n < 12; n++) {
        new PostgresOutboxStore({ pool, table: `outbox_${n}`, warn: () => undefined });
        new PostgresIdempotencyStore({ pool, table: `keys_${n}`, warn: () => undefined });
      }
      expect(pool.listenerCount('error')).toBe(1);
      expect(pool.listenerCount('connect')).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('logs a failed connection once per episode for each kind of store on the pool, through the first such store’s warn', () => {
    const pool = Object.assign(new EventEmitter(), { totalCount: 1, query: async () => ({ rows: [], rowCount: 0 }) });
    const heard: string[] = [];
    new PostgresOutboxStore({ pool, table: 'a', warn: (message) => heard.push(`first: ${message}`) });
    new PostgresOutboxStore({ pool, table: 'b', warn: (message) => heard.push(`second: ${message}`) });
    new PostgresIdempotencyStore({ pool, table: 'keys', warn: (message) => heard.push(`keys: ${message}`) });

    pool.emit('error', new Error('terminating connection due to administrator command'));
    pool.emit('error', new Error('terminating connection due to administrator command'));
    expect(heard).toHaveLength(2);
    expect(heard[0]).toMatch(/^first: .*PostgresOutboxStore: a connection of its pg pool failed \(terminating/);
    expect(heard[1]).toMatch(/^keys: .*PostgresIdempotencyStore: a connection of its pg pool failed/);

    // The pool connects anew: the next failure is a new episode.
    pool.emit('connect');
    pool.emit('error', new Error('Connection terminated unexpectedly'));
    expect(heard).toHaveLength(4);
    expect(heard[2]).toMatch(/^first: .*Connection terminated unexpectedly/);
  });
});
