import { randomUUID } from 'node:crypto';
import { Pool, PoolClient } from 'pg';
import {
  Outbox,
  OutboxEvent,
  OutboxPublishFunction,
  PostgresOutboxStore,
  ResilienceRegistry,
  VirtualClock,
} from '../../lib';
import { readOutboxOptions } from '../../lib/features/outbox/outbox.options';
import { OutboxRelay } from '../../lib/features/outbox/outbox-relay';
import { OutboxRelayOptions } from '../../lib/features/outbox/outbox.options';

/** A fresh table name, so tests never see each other's rows. */
export function tableName(prefix = 'outbox'): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
}

/** Runs `work` on a client inside BEGIN, then COMMITs (or ROLLBACKs when it throws). */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

/** A publisher that records what it was given, and fails while `failing` says so. */
export class RecordingPublisher {
  readonly events: OutboxEvent[] = [];
  failing: (event: OutboxEvent) => boolean = () => false;
  private waiters: Array<{ count: number; resolve: () => void }> = [];

  readonly publish: OutboxPublishFunction = async (event) => {
    if (this.failing(event)) throw new PublishFailed(event.topic);
    this.events.push(event);
    this.waiters = this.waiters.filter((w) => (this.events.length >= w.count ? (w.resolve(), false) : true));
  };

  /** Resolves once `count` events were published. */
  until(count: number): Promise<void> {
    if (this.events.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  ids(): string[] {
    return this.events.map((e) => e.id);
  }
}

/** What a broken broker throws. */
export class PublishFailed extends Error {}

/** A relay on its own registry, as the module builds one. */
export function makeRelay(
  store: PostgresOutboxStore,
  publish: OutboxPublishFunction,
  options: { clock: VirtualClock; relay?: OutboxRelayOptions; retention?: number; registry?: ResilienceRegistry },
): { relay: OutboxRelay; registry: ResilienceRegistry; counts: Map<string, number>; warnings: string[] } {
  const registry =
    options.registry ??
    new ResilienceRegistry({
      clock: options.clock,
      retry: { instances: { outbox: { maxAttempts: 1 } } },
      circuitBreaker: { instances: { outbox: { minimumNumberOfCalls: 1000 } } },
    });
  const settings = readOutboxOptions({
    store,
    publisher: publish,
    relay: { notify: false, ...options.relay },
    retention: options.retention,
  });
  const counts = new Map<string, number>();
  const warnings: string[] = [];
  const relay = new OutboxRelay(settings!, {
    clock: options.clock,
    retry: registry.retry(settings!.relay.retry),
    circuitBreaker: registry.circuitBreaker(settings!.relay.circuitBreaker),
    count: (topic, result) => counts.set(`${topic}:${result}`, (counts.get(`${topic}:${result}`) ?? 0) + 1),
    warn: (message) => warnings.push(message),
  });
  return { relay, registry, counts, warnings };
}

/** The rows of `table` by state. */
export async function states(pool: Pool, table: string): Promise<Record<string, number>> {
  const { rows } = await pool.query(`SELECT state, count(*)::int AS n FROM ${table} GROUP BY state`);
  return Object.fromEntries(rows.map((r) => [r.state as string, r.n as number]));
}

/** Waits (bounded, in real time: the database's round trips) until `condition` holds. */
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Advances `clock` in `step`s until `promise` settles, at most `maxTime` of virtual time. */
export async function settle<T>(clock: VirtualClock, promise: Promise<T>, maxTime = 60_000, step = 10): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let spent = 0; !done; spent += step) {
    if (spent > maxTime) throw new Error(`not settled within ${maxTime} ms of virtual time`);
    await new Promise((resolve) => setImmediate(resolve));
    if (!done) await clock.advance(step);
  }
  return promise;
}

/** What {@link freshOutbox} sets up. */
export interface FreshOutbox {
  readonly table: string;
  readonly clock: VirtualClock;
  readonly store: PostgresOutboxStore;
  readonly publisher: RecordingPublisher;
  readonly outbox: Outbox;
}

/** A table of its own on `pool`, its store on a virtual clock started at `start`, a recording publisher, and an `Outbox` with the relay off. */
export async function freshOutbox(pool: Pool, start: number): Promise<FreshOutbox> {
  const table = tableName();
  const clock = new VirtualClock(start);
  const store = new PostgresOutboxStore({ pool, table, clock });
  await store.ensureSchema();
  const publisher = new RecordingPublisher();
  const outbox = new Outbox(
    new ResilienceRegistry({ clock, outbox: { store, publisher: publisher.publish, relay: { enabled: false } } }),
  );
  return { table, clock, store, publisher, outbox };
}
