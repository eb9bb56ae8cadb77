import Redis from 'ioredis';
import { RedisCircuitBreakerStore, ResilienceRegistry } from '../lib';
import { measure } from './measure';
import { ns, printHeading, printTable, spread, times, verdict } from './report';
import { withScratchRedis } from './scratch-redis';
import { BenchSection } from './section';

/** A breaker that a healthy run never opens; the same settings shared or not. */
const BREAKER = { slidingWindowSize: 100, minimumNumberOfCalls: 100 };

/** Total commands Redis has answered, from INFO commandstats. */
async function commandsAnswered(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  let total = 0;
  for (const match of stats.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

/**
 * A healthy call through a local breaker and through a fleet-wide one
 * (`shared: true` with a RedisCircuitBreakerStore on a redis-server this
 * section starts): ns per call, interleaved rounds, and the commands Redis
 * answered while the shared breaker's calls were timed (none expected:
 * only transitions reach Redis).
 */
export const breakerFleet: BenchSection = {
  name: 'breaker-fleet',
  summary:
    'a healthy call through a local breaker vs a fleet-wide one (shared: true, Redis store), and the Redis commands it sends',
  async run() {
    printHeading('Circuit breaker — a healthy call, local vs fleet-wide');
    await withScratchRedis(async (url) => {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      const stats = new Redis(url, { maxRetriesPerRequest: 1 });
      const registry = new ResilienceRegistry({
        circuitBreakerStore: new RedisCircuitBreakerStore({ client }),
        circuitBreaker: { instances: { local: BREAKER, fleet: { ...BREAKER, shared: true } } },
      });
      try {
        const local = registry.circuitBreaker('local');
        const fleet = registry.circuitBreaker('fleet');
        await registry.fleetJoined();
        const fn = (): Promise<string> => Promise.resolve('ok');
        const before = await commandsAnswered(stats);
        process.stderr.write('breaker-fleet: timing...\n');
        const [localRun, fleetRun] = await measure([
          { label: 'local breaker', call: () => local.execute(fn), expect: 'ok' },
          { label: 'fleet-wide breaker (shared: true)', call: () => fleet.execute(fn), expect: 'ok' },
        ]);
        // The INFO call itself is one command; nothing else should have reached Redis.
        const sent = (await commandsAnswered(stats)) - before - 1;
        const calls = fleetRun.callsPerRound * fleetRun.rounds.length;
        const ratio = fleetRun.nsPerCall / localRun.nsPerCall;
        printTable(
          [{ heading: 'path', align: 'left' }, { heading: 'ns/call' }, { heading: 'spread' }, { heading: 'vs local' }],
          [localRun, fleetRun].map((m) => [
            m.label,
            ns(m.nsPerCall),
            spread(m.spread),
            times(m.nsPerCall / localRun.nsPerCall),
          ]),
        );
        console.log('');
        console.log(
          `Redis commands answered while ${calls.toLocaleString('en-US')} timed calls (and their warm-up) ran: ${sent}`,
        );
        console.log(verdict('a healthy fleet-wide call sends Redis nothing', String(sent), sent === 0));
        console.log(
          verdict('a healthy fleet-wide call costs what a local one costs (≤ 1.1×)', times(ratio), ratio <= 1.1),
        );
        if (sent !== 0) throw new Error(`breaker-fleet: healthy calls sent ${sent} commands to Redis`);
      } finally {
        registry.dispose();
        await Promise.all([client.quit(), stats.quit()]);
      }
    });
  },
};
