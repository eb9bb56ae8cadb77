import { setPriority } from 'node:os';
import Redis from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RedisRateLimiterStore } from '../lib';
import { RateLimiterStoreRequest } from '../lib/policies/rate-limiter/rate-limiter-store';
import { printHeading, printTable, spread, times, verdict } from './report';
import { withScratchRedis } from './scratch-redis';
import { BenchSection } from './section';

const CALLS_PER_ROUND = 2_000;
const WARMUP_CALLS = 5_000;
const ROUNDS = 21;
const HOUR_MS = 60 * 60 * 1000;
/** Niceness asked for redis-server, so other processes on the machine interrupt its work less. */
const SERVER_PRIORITY = -10;

/** One way of acquiring a permit in Redis, timed by the server. */
interface Side {
  readonly label: string;
  /** Acquires once; resolves to whether the permit was granted. */
  readonly call: () => Promise<boolean>;
  /** What every call must answer. */
  readonly granted: boolean;
}

/** A pair compared row by row: ours against rate-limiter-flexible's `RateLimiterRedis.consume`. */
interface Pair {
  readonly path: string;
  readonly ours: Side;
  readonly theirs: Side;
}

/**
 * Time spent inside Redis per acquire: `RedisRateLimiterStore.acquire`
 * against rate-limiter-flexible's `RateLimiterRedis.consume`, on one
 * redis-server this section starts on a free loopback port. Each round
 * resets the server's command statistics, makes sequential calls of one
 * side, and reads `usec_per_call` of EVALSHA (both send one script per
 * call; the commands inside a script count in its time); the sides take
 * turns, and the ratio is the median of the rounds' back-to-back pairs.
 */
export const rateLimiterRedis: BenchSection = {
  name: 'rate-limiter-redis',
  summary: 'µs inside Redis per acquire: RedisRateLimiterStore vs rate-limiter-flexible RateLimiterRedis',
  async run() {
    printHeading('Rate limiter — time inside Redis per acquire');
    await withScratchRedis(async (url) => {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        const info = await client.info('server');
        const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
        const prioritised = raisePriority(Number(/process_id:(\d+)/.exec(info)?.[1]));
        const pairs = sides(client);
        const rows: string[][] = [];
        const verdicts: string[] = [];
        for (const pair of pairs) {
          for (const side of [pair.ours, pair.theirs]) await verify(side);
          for (const side of [pair.ours, pair.theirs]) for (let i = 0; i < WARMUP_CALLS; i++) await side.call();
          const samples = { ours: [] as number[], theirs: [] as number[] };
          for (let round = 0; round < ROUNDS; round++) {
            process.stderr.write(`\rrate-limiter-redis: ${pair.path}, round ${round + 1}/${ROUNDS}   `);
            const order = round % 2 === 0 ? (['ours', 'theirs'] as const) : (['theirs', 'ours'] as const);
            for (const which of order) samples[which].push(await usecPerCall(client, pair[which]));
          }
          const ours = median(samples.ours);
          const theirs = median(samples.theirs);
          const ratio = median(samples.ours.map((value, i) => value / samples.theirs[i]));
          rows.push([
            pair.path,
            ours.toFixed(2),
            theirs.toFixed(2),
            times(ratio),
            spreadOf(samples.ours),
            spreadOf(samples.theirs),
          ]);
          verdicts.push(verdict(`ours ≤ rate-limiter-flexible, ${pair.path}`, times(ratio), ratio <= 1));
        }
        process.stderr.write('\n');
        printTable(
          [
            { heading: 'path', align: 'left' },
            { heading: 'RedisRateLimiterStore µs' },
            { heading: 'RateLimiterRedis.consume µs' },
            { heading: 'ours/theirs (median of pairs)' },
            { heading: 'ours spread' },
            { heading: 'theirs spread' },
          ],
          rows,
        );
        console.log('');
        for (const line of verdicts) console.log(line);
        console.log('');
        console.log(
          `usec_per_call of EVALSHA from INFO commandstats, reset before each round; ${ROUNDS} interleaved rounds of ` +
            `${CALLS_PER_ROUND.toLocaleString('en-US')} sequential calls after ${WARMUP_CALLS.toLocaleString('en-US')} ` +
            `of warm-up each; medians. redis-server ${version} on 127.0.0.1, without persistence` +
            (prioritised
              ? `, at niceness ${SERVER_PRIORITY}. `
              : ' (its priority could not be raised: run as root for steadier figures). ') +
            'Ours reads the time ' +
            "from Redis (TIME), as it does by default; rate-limiter-flexible's counter needs no clock.",
        );
      } finally {
        await client.quit();
      }
    });
  },
};

function sides(client: Redis): Pair[] {
  const store = new RedisRateLimiterStore({ client, prefix: 'bench:ours:' });
  const acquire = (request: RateLimiterStoreRequest) => async () => (await store.acquire(request)).reserved;
  const consume = (limiter: RateLimiterRedis) => () =>
    limiter.consume('k', 1).then(
      () => true,
      (refusal: unknown) => {
        if (refusal instanceof RateLimiterRes) return false;
        throw refusal;
      },
    );
  const ours = (name: string, limitForPeriod: number): RateLimiterStoreRequest => ({
    name,
    permits: 1,
    limitForPeriod,
    limitRefreshPeriodMs: HOUR_MS,
    timeoutMs: 0,
    drain: false,
  });
  const theirs = (keyPrefix: string, points: number): RateLimiterRedis =>
    new RateLimiterRedis({ storeClient: client, keyPrefix, points, duration: HOUR_MS / 1000 });
  return [
    {
      path: 'permit granted',
      ours: { label: 'ours, granted', call: acquire(ours('granted', 1e6)), granted: true },
      theirs: { label: 'theirs, granted', call: consume(theirs('bench:theirs:granted', 1e6)), granted: true },
    },
    {
      path: 'refused (limit used up)',
      ours: { label: 'ours, refused', call: acquire(ours('refused', 1)), granted: false },
      theirs: { label: 'theirs, refused', call: consume(theirs('bench:theirs:refused', 1)), granted: false },
    },
  ];
}

/** Gives the server a higher priority when allowed (as root); returns whether it did. */
function raisePriority(pid: number): boolean {
  try {
    setPriority(pid, SERVER_PRIORITY);
    return true;
  } catch {
    return false;
  }
}

/** Uses up a refusing side's single permit, then checks that a call answers as the side says. */
async function verify(side: Side): Promise<void> {
  if (!side.granted) await side.call();
  const granted = await side.call();
  if (granted !== side.granted) {
    throw new Error(`rate-limiter-redis bench: ${side.label} answered granted=${granted}, expected ${side.granted}`);
  }
}

/** Resets the server's statistics, makes a round of calls, and returns EVALSHA's µs per call. */
async function usecPerCall(client: Redis, side: Side): Promise<number> {
  await client.config('RESETSTAT');
  for (let i = 0; i < CALLS_PER_ROUND; i++) {
    if ((await side.call()) !== side.granted) throw new Error(`rate-limiter-redis bench: ${side.label} changed answer`);
  }
  const stats = await client.info('commandstats');
  const match = /cmdstat_evalsha:calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(stats);
  if (match === null || Number(match[1]) !== CALLS_PER_ROUND) {
    throw new Error(`rate-limiter-redis bench: expected ${CALLS_PER_ROUND} EVALSHA calls, INFO says ${match?.[1]}`);
  }
  return Number(match[2]);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** (slowest − fastest) / median, as `report.spread` prints it. */
function spreadOf(values: readonly number[]): string {
  return spread((Math.max(...values) - Math.min(...values)) / median(values));
}
