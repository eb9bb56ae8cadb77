import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { VirtualClock } from '../../lib/kernel/clock';
import {
  ClaimResult,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  IdempotencyStore,
  StoredHttpResponse,
  StoredResponse,
} from '../../lib/features/idempotency/idempotency-store';
import { PostgresIdempotencyStore } from '../../lib/stores/postgres-idempotency-store';
import { serverOrSkip } from '../support/server-env';
import { memoryTarget, postgresTarget, redisTarget } from './store-targets';

const START = Date.UTC(2025, 0, 1);
const LEASE = 30_000;
const TTL = 24 * 60 * 60 * 1000;
const CREATED: StoredHttpResponse = {
  kind: 'http',
  status: 201,
  headers: { location: '/payments/pay_1', 'content-type': 'application/json; charset=utf-8' },
  body: '{"id":"pay_1","amount":999,"note":"naïve ✓ \\n line"}',
};

function expectOutcome<O extends ClaimResult['outcome']>(
  result: ClaimResult,
  outcome: O,
): Extract<ClaimResult, { outcome: O }> {
  expect(result.outcome).toBe(outcome);
  return result as Extract<ClaimResult, { outcome: O }>;
}

describe.each([memoryTarget(), postgresTarget('contract'), redisTarget('contract')])(
  'IdempotencyStore contract: $name',
  (target) => {
    const url = target.server === undefined ? '' : serverOrSkip(target.server);
    if (url === undefined) return;

    let clock: VirtualClock;
    let store: IdempotencyStore;

    beforeAll(() => target.setup(url));
    afterAll(() => target.teardown());
    beforeEach(() => {
      clock = new VirtualClock(START);
      store = target.create(clock);
    });

    describe('claim', () => {
      it('lets exactly one of 50 concurrent claims of a fresh key win', async () => {
        const results = await Promise.all(Array.from({ length: 50 }, () => store.claim('k', 'fp')));
        expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
        expect(results.filter((r) => r.outcome === 'in_progress')).toHaveLength(49);
      });

      it('lets exactly one of 50 concurrent claims take over a stale record', async () => {
        expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'claimed');
        await clock.advance(LEASE);
        const results = await Promise.all(Array.from({ length: 50 }, () => store.claim('k', 'fp', { leaseMs: LEASE })));
        expect(results.filter((r) => r.outcome === 'stale')).toHaveLength(1);
        expect(results.filter((r) => r.outcome === 'in_progress')).toHaveLength(49);
      });

      it('returns the new in-progress record with its lease and TTL on the clock', async () => {
        const claimed = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE, ttlMs: TTL }), 'claimed');
        expect(claimed.token).toEqual(expect.any(String));
        expect(claimed.record).toEqual({
          key: 'k',
          state: 'in_progress',
          fingerprint: 'fp',
          createdAt: START,
          leaseExpiresAt: START + LEASE,
          expiresAt: START + TTL,
        });
        expect(await store.get('k')).toEqual(claimed.record);
      });

      it('uses a 30 s lease and a 24 h TTL by default', async () => {
        const claimed = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        expect(claimed.record.leaseExpiresAt - START).toBe(DEFAULT_IDEMPOTENCY_LEASE_MS);
        expect(claimed.record.expiresAt - START).toBe(DEFAULT_IDEMPOTENCY_TTL_MS);
        expect(DEFAULT_IDEMPOTENCY_LEASE_MS).toBe(30_000);
        expect(DEFAULT_IDEMPOTENCY_TTL_MS).toBe(86_400_000);
      });

      it('answers in_progress with the time left on the lease', async () => {
        await store.claim('k', 'fp', { leaseMs: LEASE });
        await clock.advance(12_000);
        const busy = expectOutcome(await store.claim('k', 'fp'), 'in_progress');
        expect(busy.retryAfterMs).toBe(LEASE - 12_000);
        expect(busy.record.leaseExpiresAt).toBe(START + LEASE);
      });

      it('keeps keys independent', async () => {
        expectOutcome(await store.claim('tenant-a POST /payments k', 'fp'), 'claimed');
        expectOutcome(await store.claim('tenant-b POST /payments k', 'fp'), 'claimed');
        expectOutcome(await store.claim('tenant-a POST /refunds k', 'other'), 'claimed');
      });

      it('rejects a non-positive lease or TTL', async () => {
        await expect(store.claim('k', 'fp', { leaseMs: 0 })).rejects.toThrow(/leaseMs.*positive.*got 0/);
        await expect(store.claim('k', 'fp', { ttlMs: -1 })).rejects.toThrow(/ttlMs.*positive.*got -1/);
        await expect(store.claim('k', 'fp', { leaseMs: Number.NaN })).rejects.toThrow(RangeError);
      });
    });

    describe('fingerprint mismatch', () => {
      it('is reported while the first request is in progress, before in_progress', async () => {
        await store.claim('k', 'fp-1');
        expectOutcome(await store.claim('k', 'fp-2'), 'fingerprint_mismatch');
      });

      it('is reported for a completed key', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp-1'), 'claimed');
        await store.complete('k', token, CREATED);
        expectOutcome(await store.claim('k', 'fp-2'), 'fingerprint_mismatch');
      });

      it('is reported for a stale key, which it does not take over', async () => {
        await store.claim('k', 'fp-1', { leaseMs: LEASE });
        await clock.advance(LEASE);
        expectOutcome(await store.claim('k', 'fp-2'), 'fingerprint_mismatch');
        expectOutcome(await store.claim('k', 'fp-1'), 'stale');
      });
    });

    describe('completion and replay', () => {
      it('round-trips an HTTP answer: status, headers and the body text exactly', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        expect(await store.complete('k', token, CREATED)).toBe(true);
        const replay = expectOutcome(await store.claim('k', 'fp'), 'completed');
        expect(replay.record.response).toEqual(CREATED);
        expect(replay.record).toMatchObject({ key: 'k', state: 'completed', fingerprint: 'fp', createdAt: START });
        expect(await store.get('k')).toEqual(replay.record);
      });

      it.each<[string, StoredResponse]>([
        [
          'an object',
          { kind: 'result', value: { orderId: 42, lines: [{ sku: 'A', qty: 2 }], paid: true, note: null } },
        ],
        ['a string', { kind: 'result', value: 'done' }],
        ['nothing', { kind: 'result' }],
      ])('round-trips a non-HTTP result: %s', async (_, response) => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        expect(await store.complete('k', token, response)).toBe(true);
        expect(expectOutcome(await store.claim('k', 'fp'), 'completed').record.response).toEqual(response);
      });

      it('keeps a completed record for its TTL from completion, then frees the key', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp', { ttlMs: TTL }), 'claimed');
        await clock.advance(5_000);
        await store.complete('k', token, CREATED, 60_000);
        await clock.advance(59_999);
        expectOutcome(await store.claim('k', 'fp'), 'completed');
        await clock.advance(1);
        expect(await store.get('k')).toBeUndefined();
        expectOutcome(await store.claim('k', 'another request after expiry'), 'claimed');
      });

      it('completes only once', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        expect(await store.complete('k', token, CREATED)).toBe(true);
        expect(await store.complete('k', token, { ...CREATED, status: 500 })).toBe(false);
        expect(expectOutcome(await store.claim('k', 'fp'), 'completed').record.response).toEqual(CREATED);
      });
    });

    describe('lease and expiry on the injected clock', () => {
      it('frees a stuck record at the lease, not the TTL, handing over the stale record and a new token', async () => {
        const first = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE, ttlMs: TTL }), 'claimed');
        await clock.advance(LEASE - 1);
        expectOutcome(await store.claim('k', 'fp'), 'in_progress');
        await clock.advance(1);
        const stale = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'stale');
        expect(stale.token).not.toBe(first.token);
        expect(stale.record).toEqual(first.record);
        const now = START + LEASE;
        expect(await store.get('k')).toEqual({ ...first.record, leaseExpiresAt: now + LEASE });
        expectOutcome(await store.claim('k', 'fp'), 'in_progress');
      });

      it('lets a record past its TTL be claimed afresh, with any fingerprint', async () => {
        await store.claim('k', 'fp', { leaseMs: 1_000, ttlMs: 10_000 });
        await clock.advance(10_000);
        expect(await store.get('k')).toBeUndefined();
        const fresh = expectOutcome(await store.claim('k', 'other'), 'claimed');
        expect(fresh.record.createdAt).toBe(START + 10_000);
      });

      it('never keeps a record shorter than its lease', async () => {
        const claimed = expectOutcome(await store.claim('k', 'fp', { leaseMs: 60_000, ttlMs: 1_000 }), 'claimed');
        expect(claimed.record.expiresAt).toBe(START + 60_000);
      });
    });

    describe('owner check', () => {
      it("ignores A's late completion, release and renewal after B took over", async () => {
        const a = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'claimed');
        await clock.advance(LEASE);
        const b = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'stale');
        expect(await store.complete('k', a.token, { ...CREATED, body: 'from A' })).toBe(false);
        expect(await store.release('k', a.token)).toBe(false);
        expect(await store.renew('k', a.token, 10 * LEASE)).toBe(false);
        expect(await store.get('k')).toMatchObject({ state: 'in_progress', leaseExpiresAt: START + 2 * LEASE });
        expect(await store.complete('k', b.token, CREATED)).toBe(true);
        expect(expectOutcome(await store.claim('k', 'fp'), 'completed').record.response).toEqual(CREATED);
      });

      it('hands out a fresh 128-bit base64url owner token at each claim and takeover', async () => {
        const tokens: string[] = [];
        for (let i = 0; i < 20; i++) {
          tokens.push(expectOutcome(await store.claim(`k${i}`, 'fp', { leaseMs: LEASE }), 'claimed').token);
        }
        await clock.advance(LEASE);
        for (let i = 0; i < 20; i++) {
          tokens.push(expectOutcome(await store.claim(`k${i}`, 'fp', { leaseMs: LEASE }), 'stale').token);
        }
        for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{21}[AQgw]$/);
        expect(new Set(tokens).size).toBe(tokens.length);
      });

      it('refuses an unknown token and an unknown key', async () => {
        await store.claim('k', 'fp');
        expect(await store.complete('k', 'not-the-token', CREATED)).toBe(false);
        expect(await store.complete('missing', 'any', CREATED)).toBe(false);
        expect(await store.release('missing', 'any')).toBe(false);
        expect(await store.renew('missing', 'any')).toBe(false);
        expectOutcome(await store.claim('k', 'fp'), 'in_progress');
      });

      it('lets the owner complete after its lease ran out when nobody took over', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'claimed');
        await clock.advance(2 * LEASE);
        expect(await store.complete('k', token, CREATED)).toBe(true);
        expectOutcome(await store.claim('k', 'fp'), 'completed');
      });
    });

    describe('release', () => {
      it('deletes the in-progress record so the key may run again', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        expect(await store.release('k', token)).toBe(true);
        expect(await store.get('k')).toBeUndefined();
        expectOutcome(await store.claim('k', 'fp'), 'claimed');
      });

      it('does not release a completed record', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        await store.complete('k', token, CREATED);
        expect(await store.release('k', token)).toBe(false);
        expectOutcome(await store.claim('k', 'fp'), 'completed');
      });
    });

    describe('renew', () => {
      it('extends the lease from now', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp', { leaseMs: LEASE }), 'claimed');
        await clock.advance(20_000);
        expect(await store.renew('k', token, LEASE)).toBe(true);
        await clock.advance(LEASE - 1);
        expect(expectOutcome(await store.claim('k', 'fp'), 'in_progress').retryAfterMs).toBe(1);
        await clock.advance(1);
        expectOutcome(await store.claim('k', 'fp'), 'stale');
      });

      it('stretches the record to cover a lease beyond its TTL', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp', { leaseMs: 1_000, ttlMs: 5_000 }), 'claimed');
        expect(await store.renew('k', token, 60_000)).toBe(true);
        expect(await store.get('k')).toMatchObject({ leaseExpiresAt: START + 60_000, expiresAt: START + 60_000 });
      });

      it('does not renew a completed record', async () => {
        const { token } = expectOutcome(await store.claim('k', 'fp'), 'claimed');
        await store.complete('k', token, CREATED);
        expect(await store.renew('k', token)).toBe(false);
      });
    });

    describe('cleanupExpired', () => {
      it('deletes exactly the expired records', async () => {
        const done = expectOutcome(await store.claim('completed-short', 'fp'), 'claimed');
        await store.complete('completed-short', done.token, CREATED, 1_000);
        await store.claim('abandoned', 'fp', { leaseMs: 1_000, ttlMs: 2_000 });
        await store.claim('running-long', 'fp', { leaseMs: 1_000, ttlMs: 60_000 });
        const kept = expectOutcome(await store.claim('completed-long', 'fp'), 'claimed');
        await store.complete('completed-long', kept.token, CREATED, 60_000);
        expect(await store.cleanupExpired()).toBe(0);
        await clock.advance(2_000);
        // The memory store frees expired keys itself as the clock passes them; the others leave them to cleanupExpired.
        expect(await store.cleanupExpired()).toBe(target.evictsByItself ? 0 : 2);
        expect(await store.cleanupExpired()).toBe(0);
        expect(await store.get('running-long')).toMatchObject({ state: 'in_progress' });
        expect(await store.get('completed-long')).toMatchObject({ state: 'completed' });
        expectOutcome(await store.claim('completed-short', 'fp'), 'claimed');
      });
    });
  },
);

describe('PostgresIdempotencyStore', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let clock: VirtualClock;
  const table = `idem_tx_${randomUUID().replace(/-/g, '')}`;
  const ledger = `ledger_${randomUUID().replace(/-/g, '')}`;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 10 });
    await pool.query(`CREATE TABLE "${ledger}" (id serial PRIMARY KEY, payment text NOT NULL, pence int NOT NULL)`);
  });
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS "${ledger}"`);
    await pool.query(`DROP TABLE IF EXISTS "${table}"`);
    await pool.end();
  });
  beforeEach(() => {
    clock = new VirtualClock(START);
  });

  async function inTransaction(
    commit: boolean,
    work: (client: import('pg').PoolClient) => Promise<void>,
  ): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await work(client);
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    } finally {
      client.release();
    }
  }

  describe('transactional mode', () => {
    it('leaves neither the business row nor a completed key when the transaction rolls back', async () => {
      const store = new PostgresIdempotencyStore({ pool, table, clock });
      const key = `pay-${randomUUID()}`;
      const { token } = expectOutcome(await store.claim(key, 'fp'), 'claimed');
      await inTransaction(false, async (client) => {
        await client.query(`INSERT INTO "${ledger}" (payment, pence) VALUES ($1, 999)`, [key]);
        expect(await store.completeInTransaction(client, key, token, CREATED)).toBe(true);
      });
      expect((await pool.query(`SELECT count(*)::int AS n FROM "${ledger}" WHERE payment = $1`, [key])).rows[0].n).toBe(
        0,
      );
      expect(await store.get(key)).toMatchObject({ state: 'in_progress' });
      expectOutcome(await store.claim(key, 'fp'), 'in_progress');
      expect(await store.release(key, token)).toBe(true);
    });

    it('commits the business row and the completed key together', async () => {
      const store = new PostgresIdempotencyStore({ pool, table, clock });
      const key = `pay-${randomUUID()}`;
      const { token } = expectOutcome(await store.claim(key, 'fp'), 'claimed');
      await inTransaction(true, async (client) => {
        await client.query(`INSERT INTO "${ledger}" (payment, pence) VALUES ($1, 999)`, [key]);
        expect(await store.completeInTransaction(client, key, token, CREATED)).toBe(true);
        // Until the commit, other connections still see the key running.
        expect(await store.get(key)).toMatchObject({ state: 'in_progress' });
      });
      expect((await pool.query(`SELECT count(*)::int AS n FROM "${ledger}" WHERE payment = $1`, [key])).rows[0].n).toBe(
        1,
      );
      expect(expectOutcome(await store.claim(key, 'fp'), 'completed').record.response).toEqual(CREATED);
    });

    it('refuses a token that lost the key, so the caller rolls back', async () => {
      const store = new PostgresIdempotencyStore({ pool, table, clock });
      const key = `pay-${randomUUID()}`;
      const a = expectOutcome(await store.claim(key, 'fp', { leaseMs: LEASE }), 'claimed');
      await clock.advance(LEASE);
      expectOutcome(await store.claim(key, 'fp'), 'stale');
      await inTransaction(false, async (client) => {
        expect(await store.completeInTransaction(client, key, a.token, CREATED)).toBe(false);
      });
    });
  });

  describe('schema', () => {
    it('creates its table on first use, once, even when several stores start together', async () => {
      const fresh = `idem_schema_${randomUUID().replace(/-/g, '')}`;
      try {
        const stores = Array.from({ length: 5 }, () => new PostgresIdempotencyStore({ pool, table: fresh, clock }));
        const results = await Promise.all(stores.map((store, i) => store.claim(`k${i}`, 'fp')));
        expect(results.every((r) => r.outcome === 'claimed')).toBe(true);
        const columns = await pool.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
          [fresh],
        );
        expect(columns.rows.map((r) => r.column_name)).toEqual([
          'key',
          'fingerprint',
          'state',
          'token',
          'created_at',
          'lease_expires_at',
          'expires_at',
          'response',
        ]);
      } finally {
        await pool.query(`DROP TABLE IF EXISTS "${fresh}"`);
      }
    });

    it('ships the same schema for migrations and can leave DDL to them', async () => {
      const migrated = `idem_migrated_${randomUUID().replace(/-/g, '')}`;
      try {
        await pool.query(PostgresIdempotencyStore.schemaSql(migrated));
        const store = new PostgresIdempotencyStore({ pool, table: migrated, clock, createSchema: false });
        expectOutcome(await store.claim('k', 'fp'), 'claimed');
      } finally {
        await pool.query(`DROP TABLE IF EXISTS "${migrated}"`);
      }
    });

    it('names its table resilience4nest_idempotency_keys by default, beside resilience4nest_outbox', async () => {
      expect(PostgresIdempotencyStore.schemaSql()).toContain(
        'CREATE TABLE IF NOT EXISTS "resilience4nest_idempotency_keys"',
      );
      await inSchema(async (own) => {
        expectOutcome(await new PostgresIdempotencyStore({ pool: own, clock }).claim('k', 'fp'), 'claimed');
        expect(await tablesOf(own)).toEqual(['resilience4nest_idempotency_keys']);
      });
    });

    it('finds the keys of the old default table after the documented migration, with one expiry index', async () => {
      await inSchema(async (own) => {
        const old = new PostgresIdempotencyStore({ pool: own, table: 'idempotency_keys', clock });
        expectOutcome(await old.claim('k', 'fp', { leaseMs: LEASE }), 'claimed');
        await own.query('ALTER TABLE idempotency_keys RENAME TO resilience4nest_idempotency_keys');
        await own.query(
          'ALTER INDEX idempotency_keys_expires_at_idx RENAME TO resilience4nest_idempotency_keys_expires_at_idx',
        );
        expectOutcome(await new PostgresIdempotencyStore({ pool: own, clock }).claim('k', 'fp'), 'in_progress');
        expect(await tablesOf(own)).toEqual(['resilience4nest_idempotency_keys']);
        const indexes = await own.query(
          `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1`,
        );
        // The primary key keeps its name; the expiry index renamed, none is created beside it.
        expect(indexes.rows.map((r) => r.indexname)).toEqual([
          'idempotency_keys_pkey',
          'resilience4nest_idempotency_keys_expires_at_idx',
        ]);
      });
    });

    /** Runs `work` with a pool whose unqualified tables go to a schema of its own, dropped afterwards. */
    async function inSchema(work: (own: Pool) => Promise<void>): Promise<void> {
      const schema = `idem_default_${randomUUID().replace(/-/g, '')}`;
      await pool.query(`CREATE SCHEMA "${schema}"`);
      const own = new Pool({ connectionString: url, max: 2, options: `-c search_path=${schema}` });
      try {
        await work(own);
      } finally {
        await own.end();
        await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
      }
    }

    async function tablesOf(own: Pool): Promise<string[]> {
      const { rows } = await own.query(
        `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`,
      );
      return rows.map((r: { tablename: string }) => r.tablename);
    }

    it('rejects a table name that is not an identifier', () => {
      expect(() => new PostgresIdempotencyStore({ pool, table: 'keys; DROP TABLE users' })).toThrow(
        /'table' must be an identifier/,
      );
    });
  });
});
