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

/** Hosts the keyed rows spread their calls over, each with its own breaker. */
const HOSTS = Array.from({ length: 100 }, (_, i) => `h${i}.example`);

/**
 * A healthy call through a local breaker and through a fleet-wide one
 * (`shared: true` with a RedisCircuitBreakerStore on a redis-server this
 * section starts), by name and through a keyed pipeline over 100 hosts:
 * ns per call, interleaved rounds, and the commands Redis answered while
 * the calls were timed (none expected: only transitions reach Redis).
 */
export const breakerFleet: BenchSection = {
  name: 'breaker-fleet',
  summary:
    'a healthy call through a local breaker vs a fleet-wide one (shared: true, Redis store), by name and per host, and the Redis commands it sends',
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
        const byHost = (host: string): string => host;
        const localPerHost = registry.pipeline('local', { key: byHost });
        const fleetPerHost = registry.pipeline('fleet', { key: byHost });
        const fn = (): Promise<string> => Promise.resolve('ok');
        // Every host's breaker made (and its fleet state read) before Redis is watched.
        for (const host of HOSTS)
          for (const perHost of [localPerHost, fleetPerHost]) await perHost.execute(fn, { args: [host] });
        await registry.fleetJoined();
        let localHost = 0;
        let fleetHost = 0;
        const before = await commandsAnswered(stats);
        process.stderr.write('breaker-fleet: timing...\n');
        const [localRun, fleetRun, localKeyedRun, fleetKeyedRun] = await measure([
          { label: 'local breaker', call: () => local.execute(fn), expect: 'ok' },
          { label: 'fleet-wide breaker (shared: true)', call: () => fleet.execute(fn), expect: 'ok' },
          {
            label: `local breaker per host (${HOSTS.length} hosts)`,
            call: () => localPerHost.execute(fn, { args: [HOSTS[localHost++ % HOSTS.length]] }),
            expect: 'ok',
          },
          {
            label: `fleet-wide breaker per host (${HOSTS.length} hosts)`,
            call: () => fleetPerHost.execute(fn, { args: [HOSTS[fleetHost++ % HOSTS.length]] }),
            expect: 'ok',
          },
        ]);
        // The INFO call itself is one command; nothing else should have reached Redis.
        const sent = (await commandsAnswered(stats)) - before - 1;
        const calls = [fleetRun, fleetKeyedRun].reduce((sum, m) => sum + m.callsPerRound * m.rounds.length, 0);
        const ratio = fleetRun.nsPerCall / localRun.nsPerCall;
        const keyedRatio = fleetKeyedRun.nsPerCall / localKeyedRun.nsPerCall;
        printTable(
          [{ heading: 'path', align: 'left' }, { heading: 'ns/call' }, { heading: 'spread' }, { heading: 'vs local' }],
          [
            [localRun, localRun],
            [fleetRun, localRun],
            [localKeyedRun, localKeyedRun],
            [fleetKeyedRun, localKeyedRun],
          ].map(([m, base]) => [m.label, ns(m.nsPerCall), spread(m.spread), times(m.nsPerCall / base.nsPerCall)]),
        );
        console.log('');
        console.log(
          `Redis commands answered while ${calls.toLocaleString('en-US')} timed fleet-wide calls (and every row's warm-up) ran: ${sent}`,
        );
        console.log(verdict('a healthy fleet-wide call sends Redis nothing', String(sent), sent === 0));
        console.log(
          verdict('a healthy fleet-wide call costs what a local one costs (≤ 1.1×)', times(ratio), ratio <= 1.1),
        );
        console.log(
          verdict(
            'a healthy fleet-wide call per host costs what a local one per host costs (≤ 1.1×)',
            times(keyedRatio),
            keyedRatio <= 1.1,
          ),
        );
        if (sent !== 0) throw new Error(`breaker-fleet: healthy calls sent ${sent} commands to Redis`);
      } finally {
        registry.dispose();
        await Promise.all([client.quit(), stats.quit()]);
      }
    });
  },
};
