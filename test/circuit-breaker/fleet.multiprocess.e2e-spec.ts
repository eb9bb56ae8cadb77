import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis-server';
import { serverOrSkip } from '../support/server-env';
import { delay, withTimeout } from '../support/wait';

const REPLICA = join(__dirname, 'fixtures', 'fleet-replica.ts');
/** The replicas' open wait: long enough to outlast a test's checks, short enough to reach its end. */
const WAIT_MS = 1500;
/** Loading the module through ts-node takes most of it, and much longer on a busy machine. */
const START_TIMEOUT_MS = 120_000;

interface Transition {
  readonly name: string;
  readonly from: string;
  readonly to: string;
  readonly at: number;
}

/** A replica process, its transitions and log lines as it reported them. */
class Replica {
  readonly transitions: Transition[] = [];
  readonly logs: string[] = [];
  private readonly states = new Map<string, string>();
  private nextId = 0;
  private readonly replies = new Map<number, (body: Record<string, unknown>) => void>();

  constructor(readonly child: ChildProcess) {
    child.on('message', (m: { type: string; id: number; message: string } & Transition) => {
      if (m.type === 'transition') {
        this.transitions.push({ name: m.name, from: m.from, to: m.to, at: m.at });
        this.states.set(m.name, m.to);
      } else if (m.type === 'log') this.logs.push(m.message);
      else if (m.type === 'reply') this.replies.get(m.id)?.(m as unknown as Record<string, unknown>);
    });
  }

  /** Breaker `name`'s state, as its transitions reported it. */
  state(name: string): string {
    return this.states.get(name) ?? 'CLOSED';
  }

  /** Sends a command about breaker `name` and waits (bounded) for its reply. */
  ask(type: string, name: string, extra: object = {}, timeoutMs = 5000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const answered = new Promise<Record<string, unknown>>((resolve) => this.replies.set(id, resolve));
    this.child.send({ type, id, name, ...extra });
    return withTimeout(answered, timeoutMs, `replica '${type}'`);
  }

  /** Times in ms (wall clock) breaker `name` of this replica entered `state`. */
  entered(name: string, state: string): number[] {
    return this.transitions.filter((t) => t.name === name && t.to === state).map((t) => t.at);
  }
}

/** Waits in real time, polling, until `check` holds; fails after `withinMs`. */
async function eventually(what: string, check: () => boolean, withinMs: number): Promise<void> {
  const end = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`not within ${withinMs} ms: ${what}`);
    await delay(10);
  }
}

/** Starts `count` replica processes sharing their breakers through `redisUrl` under one fresh prefix. */
async function startFleet(count: number, redisUrl: string): Promise<Replica[]> {
  const prefix = `cb-fleet-mp:${randomUUID()}:`;
  const replicas = Array.from({ length: count }, () => {
    const child = fork(REPLICA, [], {
      execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
      env: { ...process.env, FLEET_REDIS_URL: redisUrl, FLEET_PREFIX: prefix, FLEET_WAIT: String(WAIT_MS) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Replica(child);
  });
  await Promise.all(
    replicas.map((r) =>
      withTimeout(
        new Promise<void>((resolve, reject) => {
          r.child.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
          r.child.once('exit', (code) => reject(new Error(`replica exited (code ${code}) before it was ready`)));
        }),
        START_TIMEOUT_MS,
        'replica start',
      ),
    ),
  );
  return replicas;
}

/** Asks each replica to exit, and kills the one that does not. */
async function stopFleet(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(
    replicas.map(async (r) => {
      if (r.child.exitCode !== null) return;
      const exited = new Promise((resolve) => r.child.once('exit', resolve));
      r.child.send({ type: 'exit', id: -1 });
      await withTimeout(exited, 5000, 'replica exit').catch(() => r.child.kill('SIGKILL'));
    }),
  );
}

describe('fleet-wide circuit breaker across processes (real Redis)', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;
  let replicas: Replica[] = [];

  beforeAll(async () => {
    replicas = await startFleet(3, url);
  }, START_TIMEOUT_MS + 5000);
  afterAll(() => stopFleet(replicas));

  it('quorum 1: one replica opening opens the two others within one second', async () => {
    const [a, b, c] = replicas;
    await a.ask('fail', 'quorum1', { count: 4 });
    const openedAt = a.entered('quorum1', 'OPEN')[0];
    expect(openedAt).toBeDefined();
    await eventually('b and c OPEN', () => b.state('quorum1') === 'OPEN' && c.state('quorum1') === 'OPEN', 1000);
    expect(b.entered('quorum1', 'OPEN')[0] - openedAt).toBeLessThan(1000);
    expect(c.entered('quorum1', 'OPEN')[0] - openedAt).toBeLessThan(1000);
    expect((await b.ask('call', 'quorum1')).outcome).toBe('CallNotPermittedError');
  });

  it('quorum 3: a single replica opening does not open the fleet', async () => {
    const [a, b, c] = replicas;
    await a.ask('fail', 'quorum3', { count: 4 });
    expect(a.state('quorum3')).toBe('OPEN');
    await delay(1000);
    expect([b.state('quorum3'), c.state('quorum3')]).toEqual(['CLOSED', 'CLOSED']);
    expect((await b.ask('call', 'quorum3')).outcome).toBe('ok');
  });

  it('after the wait one replica in the fleet probes; its success closes every replica', async () => {
    await replicas[0].ask('fail', 'probe', { count: 4 });
    await eventually('all OPEN', () => replicas.every((r) => r.state('probe') === 'OPEN'), 1000);
    // Each replica's timer fires at the end of the wait and asks for the lease.
    await eventually(
      'a replica HALF_OPEN',
      () => replicas.some((r) => r.state('probe') === 'HALF_OPEN'),
      WAIT_MS + 1000,
    );
    await delay(300);
    const probers = replicas.filter((r) => r.entered('probe', 'HALF_OPEN').length > 0);
    expect(probers).toHaveLength(1);
    for (const other of replicas.filter((r) => r !== probers[0])) {
      expect(other.state('probe')).toBe('OPEN');
      expect((await other.ask('call', 'probe')).outcome).toBe('CallNotPermittedError');
    }
    expect((await probers[0].ask('call', 'probe')).outcome).toBe('ok');
    await eventually('every replica CLOSED', () => replicas.every((r) => r.state('probe') === 'CLOSED'), 1000);
  });

  it('a breaker forced open by hand in one process is forced open in the others within one second', async () => {
    const [a, b, c] = replicas;
    await a.ask('force-open', 'manual');
    const forcedAt = a.entered('manual', 'FORCED_OPEN')[0];
    await eventually(
      'b and c FORCED_OPEN',
      () => b.state('manual') === 'FORCED_OPEN' && c.state('manual') === 'FORCED_OPEN',
      1000,
    );
    const last = Math.max(b.entered('manual', 'FORCED_OPEN')[0], c.entered('manual', 'FORCED_OPEN')[0]);
    expect(last - forcedAt).toBeLessThan(1000);
  });
});

describe('fleet-wide circuit breaker across processes while Redis stops and restarts', () => {
  const url = serverOrSkip('redis');
  if (url === undefined) return;

  it(
    'replicas stay up, calls are not delayed, one log line each, and they rejoin after it restarts',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'fleet-redis-'));
      let redis = await startRedis(root);
      const port = Number(new URL(redis.url).port);
      const replicas = await startFleet(2, redis.url);
      const [a, b] = replicas;
      try {
        const load = [
          a.ask('steady', 'outage', { forMs: 3000 }, 10_000),
          b.ask('steady', 'outage', { forMs: 3000 }, 10_000),
        ];
        await delay(300);
        await redis.stop();
        await delay(300);
        // Without Redis, a replica's breaker is its own: A opens, B does not hear of it.
        await a.ask('fail', 'outage', { count: 4 });
        expect(a.state('outage')).toBe('OPEN');
        await delay(500);
        redis = await startRedis(root, { port });
        const [loadA, loadB] = await Promise.all(load);
        expect(b.state('outage')).toBe('CLOSED');
        for (const figures of [loadA, loadB]) {
          expect(figures.calls).toBeGreaterThan(100);
          expect(figures.slowestMs).toBeLessThan(100);
        }
        expect(loadB.refused).toBe(0);
        await eventually(
          'both replicas rejoined',
          () => replicas.every((r) => r.logs.some((line) => line.includes('reachable again'))),
          5000,
        );
        for (const r of replicas) expect(r.logs.filter((line) => line.includes('is unreachable'))).toHaveLength(1);
        await b.ask('force-open', 'outage');
        await eventually('a FORCED_OPEN through the restarted Redis', () => a.state('outage') === 'FORCED_OPEN', 1000);
      } finally {
        await stopFleet(replicas);
        await redis.stop();
        await rm(root, { recursive: true, force: true });
      }
    },
    START_TIMEOUT_MS + 30_000,
  );
});
