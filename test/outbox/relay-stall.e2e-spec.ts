import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { Outbox, OutboxEvent, PostgresOutboxStore, ResilienceModule, VirtualClock } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { withTimeout } from '../support/wait';
import { eventually, freshOutbox, inTransaction, makeRelay, RecordingPublisher, states } from './outbox-kit';

const START = Date.UTC(2026, 0, 1);

/** What a broker that refuses says. */
class BrokerRefused extends Error {}

describe('a relay that no stuck publish can stop, and that says why publishes fail', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let table: string;
  let clock: VirtualClock;
  let store: PostgresOutboxStore;
  let outbox: Outbox;
  let recorder: RecordingPublisher;

  beforeAll(() => {
    pool = new Pool({ connectionString: url, max: 8 });
  });
  afterAll(() => pool.end());

  beforeEach(async () => {
    stuckCalls = 0;
    ({ table, clock, store, publisher: recorder, outbox } = await freshOutbox(pool, START));
  });
  afterEach(() => pool.query(`DROP TABLE IF EXISTS ${table}`));

  const add = (payload: string, key: string) => inTransaction(pool, (tx) => outbox.add('t', payload, { tx, key }));
  let stuckCalls = 0;
  /** Never settles for key 'stuck'; records the others. */
  const stuckOrRecorded = (event: OutboxEvent) => {
    if (event.key !== 'stuck') return recorder.publish(event);
    stuckCalls++;
    return new Promise<void>(() => undefined);
  };

  it('keeps other keys flowing past a publish that never settles, fails that event alone after publishTimeout, and stops within it', async () => {
    const { relay, counts } = makeRelay(store, stuckOrRecorded, {
      clock,
      relay: { pollInterval: 1000, lease: 60_000, publishTimeout: '5s' },
    });
    const stuck = await add('never settles', 'stuck');
    for (const n of [1, 2, 3]) await add(`f${n}`, 'free');
    relay.start();
    try {
      // f2 is claimable only once f1 is marked sent: the stuck publish holds no one, and no virtual time passes.
      await eventually(() => recorder.events.length === 3, 'the free key published');
      expect(recorder.events.map((e) => e.payload)).toEqual(['f1', 'f2', 'f3']);
      expect(clock.now()).toBe(START);
      expect(await states(pool, table)).toEqual({ pending: 1, sent: 3 });

      // publishTimeout later, the stuck event has failed, alone, and says why.
      await clock.advance(5000);
      await eventually(async () => (await store.find(stuck))?.attempts === 1, 'the stuck event failed');
      expect(await store.find(stuck)).toMatchObject({
        state: 'pending',
        attempts: 1,
        lastError: expect.stringMatching(/OutboxPublishTimeoutError: .*did not settle within 5000 ms/),
      });
      expect(counts.get('t:failed')).toBe(1);

      // Tried again after its backoff, and stuck again. The relay sets its next poll once it has recorded the failure,
      // a database round trip after the row shows it: step the clock until the row is claimed again.
      await eventually(async () => {
        if (stuckCalls < 2) await clock.advance(1000);
        return stuckCalls === 2;
      }, 'the second publish in flight');
      // Stopping does not wait past publishTimeout for the publish in flight.
      const stopping = relay.stop();
      await clock.advance(5000);
      await withTimeout(stopping, 2000, 'stop after publishTimeout');
    } finally {
      await relay.stop();
    }
    // The second publish timed out while stopping waited: a failure like the first, the row kept pending.
    expect(await store.find(stuck)).toMatchObject({ state: 'pending', attempts: 2 });
    expect(clock.pendingTimers).toBe(0);
  }, 20_000);

  it('lets app.close() return within publishTimeout while a publish never settles', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          retry: { instances: { outbox: { maxAttempts: 1 } } },
          outbox: {
            store,
            publisher: stuckOrRecorded,
            relay: { notify: false, pollInterval: 1000, lease: 60_000, publishTimeout: '5s' },
          },
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await add('never settles', 'stuck');
    // The next poll is set when the relay's first pass has ended, after a database round trip: step the clock until it claimed the row.
    await eventually(async () => {
      if (stuckCalls === 0) await clock.advance(1000);
      return stuckCalls === 1;
    }, 'the publish in flight');
    const closing = app.close();
    await clock.advance(5000);
    await withTimeout(closing, 2000, 'app.close() after publishTimeout');
  });

  it('holds the lease of a publish that outlives it: no other relay takes the event over and publishes it again', async () => {
    let finish = (): void => undefined;
    let slowCalls = 0;
    const slow = (event: OutboxEvent) => {
      slowCalls++;
      return new Promise<void>((resolve) => (finish = resolve)).then(() => recorder.publish(event));
    };
    const options = { clock, relay: { pollInterval: 1000, lease: 10_000, publishTimeout: '60s' } };
    const first = makeRelay(store, slow, options);
    const second = makeRelay(store, recorder.publish, options);
    const id = await add('slow', 'k');
    first.relay.start();
    try {
      await eventually(() => slowCalls === 1, 'the publish in flight');
      // For three leases the publish runs on, and its row stays leased all along.
      const leasedUntil = async () => {
        const { rows } = await pool.query(`SELECT available_at FROM ${table} WHERE id = $1`, [id]);
        return Number(rows[0].available_at);
      };
      for (let step = 0; step < 30; step++) {
        await clock.advance(1000);
        await eventually(
          async () => (await leasedUntil()) > clock.now(),
          `the lease held at ${clock.now() - START} ms`,
        );
      }
      expect(await second.relay.runOnce()).toMatchObject({ claimed: 0 });
      expect(recorder.events).toHaveLength(0);
      finish();
      await eventually(async () => (await store.find(id))?.state === 'sent', 'the event sent');
      expect(recorder.ids()).toEqual([id]);
    } finally {
      finish();
      await first.relay.stop();
    }
  });

  it('publishes a whole batch at once without Node warning of a listener leak on its stop signal', async () => {
    // Node prints the warning on the process's stderr: Jest's copy of `process` does not hear its 'warning' event.
    const printed: string[] = [];
    const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    const { relay } = makeRelay(store, recorder.publish, { clock, relay: { batchSize: 50, pollInterval: 1000 } });
    try {
      for (let n = 0; n < 40; n++) await add(`e${n}`, `key-${n}`);
      expect(await relay.runOnce()).toMatchObject({ claimed: 40, published: 40 });
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      write.mockRestore();
    }
    expect(printed.join('')).not.toMatch(/MaxListenersExceededWarning/);
  });

  it('runs its statements on the listening connection one at a time: pg does not warn of queries queued on a busy client', async () => {
    // pg warns once per process (util.deprecate) when a client is asked a query while it runs one; Node prints it.
    const printed: string[] = [];
    const write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    // Every publish fails: each row is marked failed on its own, all at once.
    const { relay, counts } = makeRelay(
      store,
      async () => {
        throw new Error('refused');
      },
      { clock, relay: { notify: true, batchSize: 50, pollInterval: 1000 } },
    );
    try {
      for (let n = 0; n < 40; n++) await add(`e${n}`, `key-${n}`);
      relay.start();
      await eventually(() => counts.get('t:failed') === 40, 'every publish failed and marked');
    } finally {
      await relay.stop();
      write.mockRestore();
    }
    expect(printed.join('')).not.toMatch(/DeprecationWarning/);
    expect(await states(pool, table)).toEqual({ pending: 40 });
  });

  it('logs the first failure of an episode with its message (never the payload), stores the message in last_error', async () => {
    let refusing = true;
    const { relay, warnings } = makeRelay(
      store,
      async (event) => {
        if (refusing) throw new BrokerRefused(`no route to exchange 'orders' (event ${event.id})`);
        await recorder.publish(event);
      },
      { clock, relay: { pollInterval: 100, lease: 1000 } },
    );
    const first = await add('secret-payload-1', 'a');
    await add('secret-payload-2', 'b');
    expect(await relay.runOnce()).toMatchObject({ failed: 2 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/publishing 't' failed: BrokerRefused: no route to exchange 'orders'/);
    expect(warnings.join('\n')).not.toMatch(/secret-payload/);
    expect((await store.find(first))?.lastError).toBe(`BrokerRefused: no route to exchange 'orders' (event ${first})`);

    await clock.advance(100);
    expect(await relay.runOnce()).toMatchObject({ failed: 2 });
    expect(warnings).toHaveLength(1);

    // A publish that succeeds ends the episode; the next failure is logged again.
    refusing = false;
    await clock.advance(200);
    expect(await relay.runOnce()).toMatchObject({ published: 2 });
    refusing = true;
    await add('secret-payload-3', 'c');
    expect(await relay.runOnce()).toMatchObject({ failed: 1 });
    expect(warnings).toHaveLength(2);
  });

  it.each([
    ['a missing column', (t: string) => `ALTER TABLE ${t} DROP COLUMN lease_owner`, /has no column "lease_owner"/],
    ['a missing table', (t: string) => `DROP TABLE ${t}`, /does not exist/],
  ])('names the table and what is missing on %s, once per episode', async (_, breakIt, missing) => {
    await pool.query(breakIt(table));
    const { relay, warnings } = makeRelay(store, recorder.publish, {
      clock,
      relay: { pollInterval: 100, lease: 1000 },
    });
    relay.start();
    try {
      await eventually(() => warnings.length === 1, 'the first warning');
      for (let i = 0; i < 10; i++) await clock.advance(100);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`table '${table}'`);
      expect(warnings[0]).toMatch(missing);
      expect(warnings[0]).toMatch(/PostgresOutboxStore\.schemaSql\(\)/);
    } finally {
      await relay.stop();
    }
  });
});
