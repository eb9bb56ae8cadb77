import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { VirtualClock } from '../../lib';
import { CircuitBreakerStore, FleetTransition } from '../../lib/policies/circuit-breaker/circuit-breaker-store';
import { RedisCircuitBreakerStore } from '../../lib/stores/redis-circuit-breaker-store';
import { InMemoryCircuitBreakerStore } from '../../scenarios/fleet-store';
import { testServer } from '../support/server-env';

/** What one store under test needs: a fresh store (fresh keys), and how to let its clock move. */
interface Target {
  readonly label: string;
  make(): CircuitBreakerStore;
  /** Lets `ms` pass for the store's own times (report and lease expiry). */
  pass(ms: number): Promise<void>;
  /** Lets a published transition reach listeners. */
  heard(): Promise<void>;
  close?(): Promise<void>;
}

const redisServer = testServer('redis');
const clients: Redis[] = [];
const clock = new VirtualClock(1_000_000);

const realDelay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const TARGETS: Target[] = [
  {
    label: 'in memory',
    make: () => new InMemoryCircuitBreakerStore(clock),
    pass: (ms) => clock.advance(ms),
    heard: () => VirtualClock.settle(),
  },
];
if (redisServer.available) {
  TARGETS.push({
    label: 'Redis',
    make: () => {
      const client = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
      clients.push(client);
      return new RedisCircuitBreakerStore({ client, prefix: `cb-test:${randomUUID()}:` });
    },
    pass: (ms) => realDelay(ms),
    heard: () => realDelay(50),
  });
}

afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
});

describe.each(TARGETS)('CircuitBreakerStore contract ($label)', (target) => {
  let store: CircuitBreakerStore;
  let heard: FleetTransition[];
  let stop: () => Promise<void>;

  beforeEach(async () => {
    store = target.make();
    heard = [];
    stop = await store.listen({
      transition: (t) => void heard.push(t),
      disconnected: () => undefined,
      reconnected: () => undefined,
    });
  });
  afterEach(() => stop());

  it('opens the fleet at the first report with quorum 1, for that wait, and publishes it', async () => {
    const opened = await store.reportOpen({ name: 'pay', replica: 'a', quorum: 1, waitMs: 5000 });
    expect(opened).toMatchObject({ name: 'pay', state: 'OPEN', version: 1, replica: 'a', cause: 'quorum' });
    expect(opened?.remainingMs).toBe(5000);
    await target.heard();
    expect(heard).toEqual([opened]);
    const read = await store.read('pay');
    expect(read).toMatchObject({ state: 'OPEN', version: 1 });
    expect(read!.remainingMs).toBeGreaterThan(4800);
    expect(read!.remainingMs).toBeLessThanOrEqual(5000);
  });

  it('counts distinct replicas towards the quorum: a replica reporting twice is one report', async () => {
    const report = (replica: string) => store.reportOpen({ name: 'pay', replica, quorum: 3, waitMs: 5000 });
    expect(await report('a')).toBeUndefined();
    expect(await report('a')).toBeUndefined();
    expect(await report('b')).toBeUndefined();
    expect(await store.read('pay')).toBeUndefined();
    expect(await report('c')).toMatchObject({ state: 'OPEN', replica: 'c', version: 1 });
    await target.heard();
    expect(heard).toHaveLength(1);
  });

  it('forgets a report once its wait is over, so old reports never add up to a quorum', async () => {
    const report = (replica: string) => store.reportOpen({ name: 'pay', replica, quorum: 2, waitMs: 200 });
    expect(await report('a')).toBeUndefined();
    await target.pass(300);
    expect(await report('b')).toBeUndefined();
    expect(await report('c')).toMatchObject({ state: 'OPEN' });
  });

  it('ignores reports while the fleet is OPEN, and while it is set by hand', async () => {
    await store.reportOpen({ name: 'pay', replica: 'a', quorum: 1, waitMs: 5000 });
    expect(await store.reportOpen({ name: 'pay', replica: 'b', quorum: 1, waitMs: 5000 })).toBeUndefined();
    await store.publish({ name: 'pay', replica: 'ops', state: 'FORCED_OPEN', waitMs: 0, cause: 'manual' });
    expect(await store.reportOpen({ name: 'pay', replica: 'b', quorum: 1, waitMs: 5000 })).toBeUndefined();
    expect(await store.read('pay')).toMatchObject({
      state: 'FORCED_OPEN',
      version: 2,
      cause: 'manual',
      remainingMs: 0,
    });
  });

  it('gives the probe lease to one replica until its verdict (or its lease ends)', async () => {
    await store.reportOpen({ name: 'pay', replica: 'a', quorum: 1, waitMs: 100 });
    const claims = await Promise.all(
      ['a', 'b', 'c'].map((replica) => store.claimProbe({ name: 'pay', replica, leaseMs: 200 })),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    const verdict = await store.publish({ name: 'pay', replica: 'a', state: 'CLOSED', waitMs: 0, cause: 'verdict' });
    expect(verdict).toMatchObject({ state: 'CLOSED', version: 2, cause: 'verdict', remainingMs: 0 });
    expect(await store.claimProbe({ name: 'pay', replica: 'b', leaseMs: 200 })).toBe(true);
    expect(await store.claimProbe({ name: 'pay', replica: 'c', leaseMs: 200 })).toBe(false);
    await target.pass(300);
    expect(await store.claimProbe({ name: 'pay', replica: 'c', leaseMs: 200 })).toBe(true);
  });

  it('publishes every transition to every listener, in version order, and keeps breakers apart', async () => {
    await store.publish({ name: 'pay', replica: 'a', state: 'DISABLED', waitMs: 0, cause: 'manual' });
    await store.publish({ name: 'ship', replica: 'a', state: 'OPEN', waitMs: 700, cause: 'verdict' });
    await store.publish({ name: 'pay', replica: 'b', state: 'CLOSED', waitMs: 0, cause: 'reset' });
    await target.heard();
    expect(heard.map((t) => `${t.name} ${t.state} v${t.version} ${t.cause} ${t.remainingMs}`)).toEqual([
      'pay DISABLED v1 manual 0',
      'ship OPEN v1 verdict 700',
      'pay CLOSED v2 reset 0',
    ]);
  });

  it("keeps a name's keys apart from each other and from names, and says the key in each transition", async () => {
    await store.publish({ name: 'pay', key: 'a:b', replica: 'r', state: 'FORCED_OPEN', waitMs: 0, cause: 'manual' });
    await store.publish({ name: 'pay', key: '{a}', replica: 'r', state: 'DISABLED', waitMs: 0, cause: 'manual' });
    await store.publish({ name: 'pay|a', replica: 'r', state: 'METRICS_ONLY', waitMs: 0, cause: 'manual' });
    expect(await store.reportOpen({ name: 'pay', key: '', replica: 'r', quorum: 1, waitMs: 5000 })).toMatchObject({
      name: 'pay',
      key: '',
      state: 'OPEN',
    });
    const states = await Promise.all(
      (
        [
          ['pay', 'a:b'],
          ['pay', '{a}'],
          ['pay', 'a'],
          ['pay', ''],
          ['pay|a', undefined],
          ['pay', undefined],
        ] as const
      ).map(([name, key]) => store.read(name, key)),
    );
    expect(states.map((t) => t?.state)).toEqual([
      'FORCED_OPEN',
      'DISABLED',
      undefined,
      'OPEN',
      'METRICS_ONLY',
      undefined,
    ]);
    await target.heard();
    expect(heard.map((t) => `${t.name} ${String(t.key)} ${t.state}`)).toEqual([
      'pay a:b FORCED_OPEN',
      'pay {a} DISABLED',
      'pay|a undefined METRICS_ONLY',
      'pay  OPEN',
    ]);
  });

  it('gives back any key as it was given, beyond ASCII and a lone surrogate included', async () => {
    const key = 'tenant ü/€ \ud83d %41 %u0041';
    await store.publish({ name: 'pay', key, replica: 'r', state: 'FORCED_OPEN', waitMs: 0, cause: 'manual' });
    expect(await store.read('pay', key)).toMatchObject({ key, state: 'FORCED_OPEN' });
    expect(await store.read('pay', 'tenant ü/€ \ufffd %41 %u0041')).toBeUndefined();
    await target.heard();
    expect(heard.map((t) => t.key)).toEqual([key]);
  });

  it("counts a key's reports and gives its probe lease apart from the name's", async () => {
    const report = (replica: string, key?: string) =>
      store.reportOpen({ name: 'pay', key, replica, quorum: 2, waitMs: 5000 });
    expect(await report('a', 'h1')).toBeUndefined();
    expect(await report('b', 'h2')).toBeUndefined();
    expect(await report('c')).toBeUndefined();
    expect(await report('d', 'h1')).toMatchObject({ name: 'pay', key: 'h1', state: 'OPEN', replica: 'd' });
    const claim = (replica: string, key?: string) => store.claimProbe({ name: 'pay', key, replica, leaseMs: 5000 });
    expect([await claim('a', 'h1'), await claim('b', 'h2'), await claim('c'), await claim('d', 'h1')]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  it('gives a probe lease back for its holder only', async () => {
    const claim = (replica: string) => store.claimProbe({ name: 'pay', key: 'h1', replica, leaseMs: 5000 });
    const release = (replica: string) => store.releaseProbe({ name: 'pay', key: 'h1', replica });
    expect(await claim('a')).toBe(true);
    expect(await release('b')).toBe(false);
    expect(await claim('b')).toBe(false);
    expect(await release('a')).toBe(true);
    expect(await release('a')).toBe(false);
    expect(await claim('b')).toBe(true);
  });

  it("numbers a key's transitions upwards, above any it numbered before", async () => {
    const first = await store.publish({
      name: 'pay',
      key: 'h1',
      replica: 'a',
      state: 'OPEN',
      waitMs: 100,
      cause: 'manual',
    });
    const second = await store.publish({
      name: 'pay',
      key: 'h1',
      replica: 'a',
      state: 'CLOSED',
      waitMs: 0,
      cause: 'verdict',
    });
    expect(second.version).toBeGreaterThan(first.version);
    expect(await store.read('pay', 'h1')).toMatchObject({ state: 'CLOSED', version: second.version, key: 'h1' });
  });
});
