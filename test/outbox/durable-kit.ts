import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { DurableOutboxPublisher, Outbox, PostgresOutboxStore, ResilienceModule } from '../../lib';
import { delay, withTimeout } from '../support/wait';
import { inTransaction, states, tableName } from './outbox-kit';

const FIXTURE = join(__dirname, 'fixtures', 'durable-consumer.ts');
/** A child consumer compiles Nest and the library with ts-node: slow on a busy machine. */
const CONSUMER_START_MS = 120_000;
const POLL_MS = 100;

/** Waits until `check` answers true, polling the real servers, for at most `ms`. */
export async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${ms} ms`);
    await delay(POLL_MS);
  }
}

/** What every consumer process of a test saw: deliveries by event id, and duplicates the idempotency key absorbed. */
export class Tally {
  readonly deliveries = new Map<string, number>();
  replayed = 0;
  /** Deliveries whose handler failed (on purpose, or a key still in progress): given back to the broker. */
  failedHandler = 0;

  get delivered(): number {
    return [...this.deliveries.values()].reduce((a, b) => a + b, 0);
  }
}

/** A consumer run as a child process (fixtures/durable-consumer.ts). */
export class ConsumerProcess {
  readonly child: ChildProcess;
  private readonly exited: Promise<NodeJS.Signals | null>;
  private failure: string | undefined;
  private readonly waiters: Array<{ type: string; resolve: (m: { id?: string }) => void }> = [];

  constructor(env: Record<string, string>, tally: Tally) {
    this.child = fork(FIXTURE, [], {
      execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (_code, signal) => resolve(signal)));
    this.child.on('message', (message: { type: string; id?: string; error?: string }) => {
      if (message.type === 'delivered' && message.id !== undefined)
        tally.deliveries.set(message.id, (tally.deliveries.get(message.id) ?? 0) + 1);
      if (message.type === 'replayed') tally.replayed++;
      if (message.type === 'failed-handler') tally.failedHandler++;
      if (message.type === 'failed') this.failure = message.error;
      for (const waiter of this.waiters.filter((w) => w.type === message.type)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    });
  }

  /** Resolves with the next IPC message of `type`; rejects if the process exits first. */
  next(type: string, ms = CONSUMER_START_MS): Promise<{ id?: string }> {
    const message = new Promise<{ id?: string }>((resolve) => this.waiters.push({ type, resolve }));
    const gone = this.exited.then((signal) => {
      throw new Error(`consumer exited (signal ${signal}) before '${type}'${this.failure ? `: ${this.failure}` : ''}`);
    });
    return withTimeout(Promise.race([message, gone]), ms, `consumer '${type}'`);
  }

  /** SIGKILL, and waits until the process is gone. */
  async kill(): Promise<NodeJS.Signals | null> {
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** Asks the consumer to close (acknowledgements flushed), and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.send({ type: 'stop' });
    await withTimeout(this.exited, 30_000, 'consumer stop').catch(() => this.kill());
  }
}

/** The producer side: an outbox on its own table, publishing through `publisher`. */
export class Producer {
  private constructor(
    readonly app: INestApplicationContext,
    readonly outboxTable: string,
    private readonly pool: Pool,
  ) {}

  static async start(pool: Pool, publisher: DurableOutboxPublisher): Promise<Producer> {
    const outboxTable = tableName();
    const store = new PostgresOutboxStore({ pool, table: outboxTable });
    @Module({
      imports: [
        ResilienceModule.forRoot({
          retry: { instances: { outbox: { maxAttempts: 3, waitDuration: 100 } } },
          // A broker restart fails publishes for a while: the breaker stays closed so the relay goes on as soon as it is back.
          circuitBreaker: { instances: { outbox: { minimumNumberOfCalls: 100_000 } } },
          outbox: { store, publisher, relay: { pollInterval: '200ms', lease: '20s', maxAttempts: 1000 } },
        }),
      ],
    })
    class ProducerModule {}
    const app = await NestFactory.createApplicationContext(ProducerModule, { logger: false });
    await app.init();
    return new Producer(app, outboxTable, pool);
  }

  /** Commits one event of `order.created`; resolves with its id. */
  commit(orderId: string): Promise<string> {
    const outbox = this.app.get(Outbox);
    return inTransaction(this.pool, (tx) => outbox.add('order.created', { orderId }, { tx, key: orderId }));
  }

  /** Resolves once `count` events are marked sent: the broker confirmed each. */
  sent(count: number, ms: number): Promise<void> {
    return until(async () => ((await states(this.pool, this.outboxTable)).sent ?? 0) >= count, ms, `${count} sent`);
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.pool.query(`DROP TABLE IF EXISTS ${this.outboxTable}`);
  }
}

/** The consumer's effect table: one row per application of an event. */
export class Effects {
  readonly table = tableName('shipments');
  readonly keys = tableName('consumer_keys');

  constructor(private readonly pool: Pool) {}

  async create(): Promise<void> {
    await this.pool.query(`CREATE TABLE ${this.table} (id serial PRIMARY KEY, event_id text NOT NULL)`);
  }

  /** How often each event was applied. */
  async counts(): Promise<Map<string, number>> {
    const { rows } = await this.pool.query(`SELECT event_id, count(*)::int AS n FROM ${this.table} GROUP BY event_id`);
    return new Map(rows.map((r) => [r.event_id as string, r.n as number]));
  }

  /** Resolves once every one of `ids` was applied. */
  async applied(ids: readonly string[], ms: number): Promise<void> {
    let missing = ids.length;
    await until(
      async () => {
        const counts = await this.counts();
        missing = ids.filter((id) => !counts.has(id)).length;
        return missing === 0;
      },
      ms,
      `${ids.length} events applied`,
    ).catch((error: Error) => {
      throw new Error(`${error.message} (${missing} missing)`);
    });
  }

  async drop(): Promise<void> {
    await this.pool.query(`DROP TABLE IF EXISTS ${this.table}, ${this.keys}`);
  }
}

/** The crash test's figures: each event applied once, however often delivered. */
export interface CrashCounts {
  readonly events: number;
  readonly delivered: number;
  readonly duplicatesAbsorbed: number;
  readonly handlerFailed: number;
  readonly rolledBack: number;
  readonly lost: number;
  readonly appliedTwice: number;
}

/** The figures of `ids` after a crash test, from the effect table and what the consumers reported. */
export async function crashCounts(ids: readonly string[], effects: Effects, tally: Tally): Promise<CrashCounts> {
  const counts = await effects.counts();
  const delivered = tally.delivered;
  return {
    events: ids.length,
    delivered,
    duplicatesAbsorbed: tally.replayed,
    handlerFailed: tally.failedHandler,
    // Deliveries that neither applied the event, nor were absorbed, nor failed: their transaction died with the process.
    rolledBack: delivered - ids.length - tally.replayed - tally.failedHandler,
    lost: ids.filter((id) => !counts.has(id)).length,
    appliedTwice: [...counts.values()].filter((n) => n > 1).length,
  };
}

/** A broker the suite can restart on the same port and data. */
export interface RestartableBroker {
  readonly port: number;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

/** Where one test's events go: its publisher and what its consumers are told. */
export interface Destination {
  readonly publisher: DurableOutboxPublisher;
  readonly consumerEnv: Record<string, string>;
  close(): Promise<void>;
}

/** One durable transport under the shared scenarios. */
export interface DurableTransportCase {
  readonly name: string;
  start(root: string): Promise<RestartableBroker>;
  /** A fresh stream or queue for test `id`. */
  prepare(broker: RestartableBroker, id: string): Promise<Destination>;
  /** Jest timeout of the suite's setup (starting the broker). */
  readonly setupMs: number;
  /** Jest timeout of each scenario. */
  readonly testMs: number;
  /** Tests of this transport alone, on the suite's broker. */
  readonly more?: (broker: () => RestartableBroker) => void;
}

/**
 * The scenarios every durable transport passes, against the real broker
 * and PostgreSQL, with consumers in child processes: a backlog committed
 * while the consumer is down, a consumer SIGKILLed mid-message three
 * times, and the broker restarted under a steady stream.
 */
export function durableTransportScenarios(databaseUrl: string, transport: DurableTransportCase): void {
  let root: string;
  let broker: RestartableBroker;
  let pool: Pool;
  let effects: Effects;
  let destination: Destination;
  let producer: Producer;
  let tally: Tally;
  const consumers: ConsumerProcess[] = [];
  let testNumber = 0;

  const consumer = (env: Record<string, string> = {}): ConsumerProcess => {
    const started = new ConsumerProcess(
      {
        ...destination.consumerEnv,
        CONSUMER_DATABASE_URL: databaseUrl,
        CONSUMER_EFFECTS_TABLE: effects.table,
        CONSUMER_KEYS_TABLE: effects.keys,
        ...env,
      },
      tally,
    );
    consumers.push(started);
    return started;
  };

  const commitAll = async (prefix: string, count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 10)
      ids.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(10, count - i) }, (_, j) => producer.commit(`${prefix}-${i + j}`)),
        )),
      );
    return ids;
  };

  beforeAll(async () => {
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    root = await mkdtemp(join(tmpdir(), 'resilience4nest-durable-'));
    pool = new Pool({ connectionString: databaseUrl, max: 12 });
    broker = await transport.start(root);
  }, transport.setupMs);

  afterAll(async () => {
    await broker?.stop();
    await pool?.end();
    const { rm } = await import('node:fs/promises');
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  }, 60_000);

  beforeEach(async () => {
    testNumber++;
    tally = new Tally();
    effects = new Effects(pool);
    await effects.create();
    destination = await transport.prepare(broker, `t${testNumber}_${tableName('').slice(1, 9)}`);
    producer = await Producer.start(pool, destination.publisher);
  }, 60_000);

  afterEach(async () => {
    for (const running of consumers.splice(0)) await running.stop();
    await producer?.close();
    await destination?.close();
    await effects?.drop();
  }, 60_000);

  it(
    'applies 200 events committed while the consumer was down, each once, after it starts',
    async () => {
      const ids = await commitAll('down', 200);
      await producer.sent(ids.length, 60_000);
      const late = consumer();
      await late.next('listening');
      await effects.applied(ids, 120_000);
      await late.stop();
      const counts = await crashCounts(ids, effects, tally);
      expect(counts).toMatchObject({ events: 200, lost: 0, appliedTwice: 0 });
      expect([...(await effects.counts()).values()]).toEqual(ids.map(() => 1));
    },
    transport.testMs,
  );

  it(
    'a consumer SIGKILLed mid-message three times, then one whose handler fails: every event applied exactly once',
    async () => {
      const ids = await commitAll('crash', 60);
      await producer.sent(ids.length, 60_000);
      const kills = [
        { at: 3, point: 'in-transaction' },
        { at: 5, point: 'after-commit' },
        { at: 2, point: 'in-transaction' },
      ];
      const stalledAt: string[] = [];
      for (const { at, point } of kills) {
        const doomed = consumer({ CONSUMER_STALL_AT: String(at), CONSUMER_STALL_POINT: point });
        const { id } = await doomed.next('stalled');
        stalledAt.push(id as string);
        expect(await doomed.kill()).toBe('SIGKILL');
      }
      // The survivor's handler fails its first three deliveries: each of those messages comes back too.
      const survivor = consumer({ CONSUMER_FAIL_FIRST: '3' });
      await effects.applied(ids, 180_000);
      await survivor.stop();
      const counts = await crashCounts(ids, effects, tally);
      process.stderr.write(`\n[${transport.name}] consumer SIGKILLed 3 times: ${JSON.stringify(counts)}\n`);
      expect(counts).toMatchObject({ events: 60, lost: 0, appliedTwice: 0 });
      // Each message in hand at a kill came again; the one killed after its commit was absorbed by its key.
      for (const id of stalledAt) expect(tally.deliveries.get(id)).toBeGreaterThanOrEqual(2);
      expect(counts.duplicatesAbsorbed).toBeGreaterThanOrEqual(1);
      expect(counts.handlerFailed).toBeGreaterThanOrEqual(3);
      expect(counts.delivered).toBeGreaterThanOrEqual(ids.length + kills.length);
    },
    transport.testMs,
  );

  it(
    'the broker restarted during a steady stream: every committed event applied once',
    async () => {
      const running = consumer();
      await running.next('listening');
      const ids: string[] = [];
      let restarted = false;
      const restart = (async () => {
        await until(async () => ids.length >= 40, 60_000, '40 events committed');
        await broker.restart();
        restarted = true;
      })();
      // A steady stream, before, during and after the restart.
      for (let n = 0; (!restarted || ids.length < 120) && n < 5000; n++) {
        ids.push(await producer.commit(`steady-${n}`));
        await delay(20);
      }
      await restart;
      await effects.applied(ids, 180_000);
      await running.stop();
      const counts = await crashCounts(ids, effects, tally);
      process.stderr.write(`\n[${transport.name}] broker restarted mid-stream: ${JSON.stringify(counts)}\n`);
      expect(counts).toMatchObject({ lost: 0, appliedTwice: 0 });
    },
    transport.testMs,
  );

  transport.more?.(() => broker);
}
