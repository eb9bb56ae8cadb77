import { Pool } from 'pg';
import { Outbox, OutboxNoTransactionError, PostgresOutboxStore, ResilienceRegistry, VirtualClock } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { freshOutbox, inTransaction, makeRelay, PublishFailed, RecordingPublisher, settle, states } from './outbox-kit';

const START = Date.UTC(2026, 0, 1);

describe('the outbox on PostgreSQL', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let table: string;
  let clock: VirtualClock;
  let store: PostgresOutboxStore;
  let outbox: Outbox;
  let publisher: RecordingPublisher;

  beforeAll(() => {
    pool = new Pool({ connectionString: url, max: 12 });
  });
  afterAll(() => pool.end());

  beforeEach(async () => {
    ({ table, clock, store, publisher, outbox } = await freshOutbox(pool, START));
  });
  afterEach(() => pool.query(`DROP TABLE IF EXISTS ${table}`));

  describe('Outbox.add', () => {
    it('refuses to write with no transaction in scope, and writes nothing', async () => {
      const adding = outbox.add('order.created', { id: 1 });
      await expect(adding).rejects.toBeInstanceOf(OutboxNoTransactionError);
      await expect(adding).rejects.toMatchObject({ code: 'OUTBOX_NO_TRANSACTION', topic: 'order.created' });
      expect(await states(pool, table)).toEqual({});
    });

    it('refuses a pool given as the transaction: each statement would commit alone', async () => {
      await expect(outbox.add('order.created', {}, { tx: pool })).rejects.toThrow(/given a pool as \{ tx \}/);
      expect(await states(pool, table)).toEqual({});
    });

    it('refuses a pg client outside BEGIN: each statement would commit alone, even when the caller rolls back', async () => {
      const client = await pool.connect();
      try {
        await client.query('SELECT 1');
        await expect(outbox.add('order.created', {}, { tx: client })).rejects.toThrow(
          /Outbox.add\('order.created'\) was given a client that is not inside a transaction \(no BEGIN\)/,
        );
        // Rolled back after a BEGIN, nothing was written either.
        await client.query('BEGIN');
        await outbox.add('order.created', {}, { tx: client });
        await client.query('ROLLBACK');
      } finally {
        client.release();
      }
      expect(await states(pool, table)).toEqual({});
    });

    it('asks PostgreSQL when the client cannot tell its transaction status (an older pg, a wrapper)', async () => {
      const client = await pool.connect();
      // Only `query`: what an older pg client or a thin wrapper offers.
      const bare = { query: (text: string, values?: unknown[]) => client.query(text, values) };
      try {
        await expect(outbox.add('t', 1, { tx: bare })).rejects.toThrow(/not inside a transaction \(no BEGIN\)/);
        await client.query('BEGIN');
        const id = await outbox.add('t', 2, { tx: bare });
        await client.query('COMMIT');
        expect(await store.find(id)).toMatchObject({ payload: 2, state: 'pending' });
      } finally {
        client.release();
      }
      expect(await states(pool, table)).toEqual({ pending: 1 });
    });

    it('writes in the given transaction: gone with a rollback, there with a commit', async () => {
      await expect(
        inTransaction(pool, async (tx) => {
          await outbox.add('order.created', { id: 1 }, { tx });
          throw new Error('business rule failed');
        }),
      ).rejects.toThrow('business rule failed');
      expect(await states(pool, table)).toEqual({});

      const id = await inTransaction(pool, (tx) =>
        outbox.add(
          'order.created',
          { id: 2, lines: [{ sku: 'a', qty: 1 }] },
          { tx, key: 'order-2', headers: { tenant: 't1' } },
        ),
      );
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      const row = await store.find(id);
      expect(row).toMatchObject({
        id,
        topic: 'order.created',
        key: 'order-2',
        payload: { id: 2, lines: [{ sku: 'a', qty: 1 }] },
        headers: { tenant: 't1' },
        occurredAt: START,
        state: 'pending',
        attempts: 0,
      });
    });

    it('keeps a given id, and a second event with that id fails its transaction', async () => {
      await inTransaction(pool, (tx) => outbox.add('t', 1, { tx, id: 'evt-1' }));
      await expect(inTransaction(pool, (tx) => outbox.add('t', 2, { tx, id: 'evt-1' }))).rejects.toThrow(
        /duplicate key/,
      );
      expect(await states(pool, table)).toEqual({ pending: 1 });
    });

    it('names the bad argument', async () => {
      await inTransaction(pool, async (tx) => {
        await expect(outbox.add('', 1, { tx })).rejects.toThrow(/topic must be a non-empty string/);
        await expect(outbox.add('t', 1, { tx, key: '' })).rejects.toThrow(/option 'key' must be a non-empty string/);
        await expect(outbox.add('t', 1, { tx, headers: { a: 1 as never } })).rejects.toThrow(
          /option 'headers' must be an object of strings/,
        );
        await expect(outbox.add('t', 10n, { tx })).rejects.toThrow(/payload cannot be written as JSON/);
        await expect(outbox.add('t', undefined, { tx })).rejects.toThrow(/undefined has no JSON form/);
        await expect(outbox.add('t', 1, { tx: 'client' })).rejects.toThrow(/cannot run SQL on "client"/);
      });
    });

    it('serializes transactions adding to one key, so per key the table order is the commit order', async () => {
      const first = await pool.connect();
      await first.query('BEGIN');
      await outbox.add('t', 'first', { tx: first, key: 'k' });
      const secondDone = inTransaction(pool, (tx) => outbox.add('t', 'second', { tx, key: 'k' }));
      const otherKey = await inTransaction(pool, (tx) => outbox.add('t', 'other', { tx, key: 'other' }));
      let settled = false;
      void secondDone.then(() => (settled = true));
      // The other key went through; the same key waits for the first transaction.
      expect(otherKey).toBeDefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).toBe(false);
      await first.query('COMMIT');
      first.release();
      await secondDone;
      const { rows } = await pool.query(`SELECT payload FROM ${table} WHERE key = 'k' ORDER BY seq`);
      expect(rows.map((r) => r.payload)).toEqual(['first', 'second']);
    });
  });

  describe('lookups by id', () => {
    it('find nothing and requeue nothing for an id PostgreSQL cannot hold (a NUL in it), without an error', async () => {
      await inTransaction(pool, (tx) => outbox.add('t', 1, { tx, id: 'evt-1' }));
      expect(await store.find('evt-1\0')).toBeUndefined();
      expect(await store.requeue('evt-1\0')).toBe(false);
      expect(await outbox.requeue('\0')).toBe(false);
      expect(await store.find('evt-1')).toMatchObject({ id: 'evt-1', state: 'pending' });
    });
  });

  describe('Outbox.replay', () => {
    it('puts sent events back in line, in their order per key, and counts them', async () => {
      const { relay } = makeRelay(store, publisher.publish, { clock });
      const a1 = await inTransaction(pool, (tx) => outbox.add('t', 'a1', { tx, key: 'a' }));
      await inTransaction(pool, (tx) => outbox.add('t', 'a2', { tx, key: 'a' }));
      await clock.advance(60_000);
      const b1 = await inTransaction(pool, (tx) => outbox.add('other', 'b1', { tx }));
      while ((await relay.runOnce()).claimed > 0);
      const unsent = await inTransaction(pool, (tx) => outbox.add('t', 'unsent', { tx, key: 'z' }));
      expect(publisher.events.map((e) => e.payload)).toEqual(['a1', 'b1', 'a2']);

      expect(await outbox.replay({ topic: 't' })).toBe(2);
      expect(await store.find(a1)).toMatchObject({ state: 'pending', attempts: 0, sentAt: undefined });
      // a2 waits behind a1 again: one per key, in order.
      expect(await relay.runOnce()).toMatchObject({ claimed: 2, published: 2 });
      expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
      expect(publisher.events.slice(3).map((e) => e.payload)).toEqual(['a1', 'unsent', 'a2']);

      expect(await outbox.replay({ since: START + 60_000 })).toBe(2);
      expect(await outbox.replay({ ids: [b1, unsent, 'no-such-id', 'x\0'] })).toBe(0);
      while ((await relay.runOnce()).claimed > 0);
      expect(await outbox.replay({ ids: [b1, unsent], topic: 'other', since: new Date(START) })).toBe(1);
      expect(await outbox.replay({ ids: [a1], since: new Date(START + 1).toISOString() })).toBe(0);
      expect(await states(pool, table)).toEqual({ sent: 3, pending: 1 });
    });

    it.each([
      [undefined, /Outbox.replay: the selection must be an object/],
      [{}, /Outbox.replay: give at least one of 'ids', 'topic' or 'since'/],
      [{ ids: [] }, /Outbox.replay: option 'ids' must be a non-empty array of non-empty strings, got \[\]/],
      [{ ids: 'evt-1' }, /option 'ids' must be a non-empty array of non-empty strings, got "evt-1"/],
      [{ topic: '' }, /option 'topic' must be a non-empty string/],
      [
        { since: 'yesterday' },
        /option 'since' must be a Date, a time in ms since the epoch or an ISO 8601 string, got "yesterday"/,
      ],
      [{ since: Number.NaN }, /option 'since' must be a Date/],
      [{ topc: 't' }, /Outbox.replay: unknown option 'topc' \(known: ids, topic, since\)/],
    ])('refuses %p, naming what is wrong', async (selection, message) => {
      await expect(outbox.replay(selection as never)).rejects.toThrow(message);
    });
  });

  describe('the relay', () => {
    it('publishes committed events, marks them sent, and never publishes a rolled-back one', async () => {
      const { relay, counts } = makeRelay(store, publisher.publish, { clock });
      const a = await inTransaction(pool, (tx) => outbox.add('a', { n: 1 }, { tx }));
      await inTransaction(pool, (tx) => outbox.add('b', { n: 2 }, { tx })).then(() => undefined);
      await expect(
        inTransaction(pool, async (tx) => {
          await outbox.add('c', { n: 3 }, { tx });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow();
      expect(await relay.runOnce()).toEqual({ claimed: 2, published: 2, failed: 0, parked: 0, notPermitted: 0 });
      expect(publisher.events.map((e) => [e.topic, e.payload])).toEqual([
        ['a', { n: 1 }],
        ['b', { n: 2 }],
      ]);
      expect(publisher.events[0]).toEqual({
        id: a,
        topic: 'a',
        key: null,
        payload: { n: 1 },
        headers: {},
        occurredAt: START,
      });
      expect(await states(pool, table)).toEqual({ sent: 2 });
      expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
      expect(Object.fromEntries(counts)).toEqual({ 'a:published': 1, 'b:published': 1 });
    });

    it('wakes on LISTEN/NOTIFY when an adding transaction commits, with no poll due', async () => {
      const { relay } = makeRelay(store, publisher.publish, {
        clock,
        relay: { notify: true, pollInterval: '1h', lease: '2h' },
      });
      relay.start();
      try {
        await inTransaction(pool, (tx) => outbox.add('t', 'first', { tx }));
        await publisher.until(1);
        await inTransaction(pool, (tx) => outbox.add('t', 'second', { tx }));
        await publisher.until(2);
        expect(clock.now()).toBe(START);
        expect(publisher.events.map((e) => e.payload)).toEqual(['first', 'second']);
      } finally {
        await relay.stop();
      }
    });

    it('publishes on its listening connection while the application holds every other connection of the pool', async () => {
      const small = new Pool({ connectionString: url, max: 3 });
      const busyStore = new PostgresOutboxStore({ pool: small, table, clock });
      const { relay } = makeRelay(busyStore, publisher.publish, {
        clock,
        relay: { notify: true, pollInterval: '1h', lease: '2h' },
      });
      // The application's transactions take two of the three connections and keep them.
      const held = [await small.connect(), await small.connect()];
      relay.start();
      try {
        await inTransaction(pool, (tx) => outbox.add('t', 'while busy', { tx }));
        await publisher.until(1);
        // Stopping waits for the pass, which marks the event sent on the same connection.
        await relay.stop();
        expect(publisher.events.map((e) => e.payload)).toEqual(['while busy']);
        expect(await states(pool, table)).toEqual({ sent: 1 });
      } finally {
        for (const client of held) client.release();
        await relay.stop();
        await small.end();
      }
    }, 10_000);

    it('publishes one event per key at a time, in commit order, without holding up other keys', async () => {
      const { relay } = makeRelay(store, publisher.publish, { clock, relay: { pollInterval: 1000, lease: 30_000 } });
      for (const n of [1, 2, 3]) await inTransaction(pool, (tx) => outbox.add('t', `k${n}`, { tx, key: 'k' }));
      await inTransaction(pool, (tx) => outbox.add('t', 'free', { tx }));
      await inTransaction(pool, (tx) => outbox.add('t', 'j1', { tx, key: 'j' }));
      publisher.failing = (e) => e.payload === 'k1' && publisher.events.length < 3;

      const first = await relay.runOnce();
      expect(first).toMatchObject({ claimed: 3, published: 2, failed: 1 });
      expect(publisher.events.map((e) => e.payload)).toEqual(['free', 'j1']);
      // k1 is backing off; k2 and k3 wait behind it.
      expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
      await clock.advance(1000);
      publisher.failing = () => false;
      expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
      expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
      expect(await relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
      expect(publisher.events.map((e) => e.payload)).toEqual(['free', 'j1', 'k1', 'k2', 'k3']);
    });

    it('parks an event after maxAttempts failures, keeps it, counts it, and publishes it once requeued', async () => {
      const { relay, counts } = makeRelay(store, publisher.publish, {
        clock,
        relay: { maxAttempts: 3, pollInterval: 100, lease: 1000 },
      });
      publisher.failing = () => true;
      const id = await inTransaction(pool, (tx) => outbox.add('t', 'poison', { tx, key: 'p' }));
      await inTransaction(pool, (tx) => outbox.add('t', 'behind', { tx, key: 'p' }));
      expect(await relay.runOnce()).toMatchObject({ failed: 1 });
      await clock.advance(100);
      expect(await relay.runOnce()).toMatchObject({ failed: 1 });
      await clock.advance(199);
      expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
      await clock.advance(1);
      expect(await relay.runOnce()).toMatchObject({ parked: 1 });
      await clock.advance(60_000);
      // Parked, the event holds its key: 'behind' is not published out of order.
      expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
      expect(await store.stats()).toEqual({ pending: 1, parked: 1, oldestPendingAgeMs: 60_300 });
      expect(await outbox.parked()).toEqual([
        expect.objectContaining({ id, state: 'parked', attempts: 3, lastError: 'PublishFailed: t', payload: 'poison' }),
      ]);
      expect(Object.fromEntries(counts)).toEqual({ 't:failed': 2, 't:parked': 1 });

      publisher.failing = () => false;
      expect(await outbox.requeue('no-such-id')).toBe(false);
      expect(await outbox.requeue(id)).toBe(true);
      expect(await outbox.requeue(id)).toBe(false);
      expect(await relay.runOnce()).toMatchObject({ published: 1 });
      expect(await relay.runOnce()).toMatchObject({ published: 1 });
      expect(publisher.events.map((e) => e.payload)).toEqual(['poison', 'behind']);
      expect(await store.stats()).toEqual({ pending: 0, parked: 0, oldestPendingAgeMs: 0 });
    });

    it('retries a publish with the named Retry instance behind the named CircuitBreaker, with their events', async () => {
      const registry = new ResilienceRegistry({
        clock,
        retry: { instances: { broker: { maxAttempts: 3, waitDuration: 10, retryExceptions: [PublishFailed] } } },
        circuitBreaker: {
          instances: { broker: { minimumNumberOfCalls: 2, slidingWindowSize: 2, waitDurationInOpenState: 600_000 } },
        },
      });
      const retries: number[] = [];
      registry.retry('broker').onRetry((e) => retries.push(e.attempt));
      const transitions: string[] = [];
      registry.circuitBreaker('broker').onStateTransition((e) => transitions.push(`${e.from}->${e.to}`));
      const { relay, counts } = makeRelay(store, publisher.publish, {
        clock,
        registry,
        // Failed rows back off for a minute: the settled passes below move virtual time while rows are marked one by one.
        relay: { retry: 'broker', circuitBreaker: 'broker', pollInterval: 60_000, lease: 600_000 },
      });
      let calls = 0;
      publisher.failing = () => ++calls <= 1;
      await inTransaction(pool, (tx) => outbox.add('t', 'flaky', { tx }));
      expect(await settle(clock, relay.runOnce())).toMatchObject({ published: 1 });
      expect(retries).toEqual([1]);

      // The broker goes down: two failures open the breaker, the next events are not even tried.
      publisher.failing = () => true;
      for (const n of [1, 2, 3]) await inTransaction(pool, (tx) => outbox.add('t', `down${n}`, { tx, key: `k${n}` }));
      const result = await settle(clock, relay.runOnce());
      expect(transitions).toContain('CLOSED->OPEN');
      expect(result.claimed).toBe(3);
      expect(result.notPermitted).toBeGreaterThanOrEqual(1);
      expect(counts.get('t:not_permitted')).toBe(result.notPermitted);
      // Refused events are not charged an attempt, and wait out the breaker.
      const { rows } = await pool.query(`SELECT attempts FROM ${table} WHERE state = 'pending' ORDER BY attempts`);
      expect(rows.filter((r) => r.attempts === 0)).toHaveLength(result.notPermitted);
      expect(await relay.runOnce()).toMatchObject({ claimed: 0 });
    });

    it('lets another relay take over a batch whose lease ran out; the first one cannot mark it', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const stuck = makeRelay(store, () => held, { clock, relay: { lease: 5000 } });
      const healthy = makeRelay(store, publisher.publish, { clock, relay: { lease: 5000 } });
      await inTransaction(pool, (tx) => outbox.add('t', 'x', { tx }));
      const stuckPass = stuck.relay.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await healthy.relay.runOnce()).toMatchObject({ claimed: 0 });
      await clock.advance(4999);
      expect(await healthy.relay.runOnce()).toMatchObject({ claimed: 0 });
      await clock.advance(1);
      expect(await healthy.relay.runOnce()).toMatchObject({ claimed: 1, published: 1 });
      release();
      // The first relay published too (the duplicate of crash point 3), but its mark finds the row gone from it.
      expect(await stuckPass).toMatchObject({ claimed: 1, published: 1 });
      expect(await states(pool, table)).toEqual({ sent: 1 });
    });

    it('runs several relays in parallel without publishing any event twice', async () => {
      const relays = [1, 2, 3].map(
        () => makeRelay(store, publisher.publish, { clock, relay: { batchSize: 25 } }).relay,
      );
      const total = 600;
      for (let i = 0; i < total; i += 100)
        await inTransaction(pool, async (tx) => {
          for (let j = i; j < i + 100; j++)
            await outbox.add('t', j, { tx, key: j % 7 === 0 ? `k${j % 5}` : undefined });
        });
      const drain = async (relay: (typeof relays)[number]) => {
        while ((await relay.runOnce()).claimed > 0);
      };
      while ((await states(pool, table)).pending) await Promise.all(relays.map(drain));
      const ids = publisher.ids();
      expect(ids).toHaveLength(total);
      expect(new Set(ids).size).toBe(total);
      for (const k of [0, 1, 2, 3, 4]) {
        const ordered = publisher.events.filter((e) => e.key === `k${k}`).map((e) => e.payload as number);
        expect(ordered).toEqual([...ordered].sort((a, b) => a - b));
      }
    });

    it('deletes sent events past retention, in batches, and keeps the rest', async () => {
      const { relay } = makeRelay(store, publisher.publish, { clock, retention: 60_000 });
      await inTransaction(pool, async (tx) => {
        for (let i = 0; i < 1200; i++) await outbox.add('t', i, { tx });
      });
      while ((await relay.runOnce()).claimed > 0);
      await clock.advance(30_000);
      await inTransaction(pool, (tx) => outbox.add('t', 'late', { tx }));
      await relay.runOnce();
      await inTransaction(pool, (tx) => outbox.add('t', 'unsent', { tx }));
      expect(await relay.deleteSent()).toBe(0);
      await clock.advance(30_000);
      expect(await relay.deleteSent()).toBe(1200);
      expect(await states(pool, table)).toEqual({ sent: 1, pending: 1 });
    });
  });
});
