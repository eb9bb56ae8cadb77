import { ResilienceModuleOptions, ResilienceRegistry } from '../lib';
import { collectGarbage } from './measure';
import { printHeading, printTable, verdict } from './report';
import { BenchSection } from './section';

const BREAKERS = 10_000;
const CALLS_PER_BREAKER = 3;
const TARGET_MB = 30;
const MB = 1e6;
const TIME_BASED_60S = { slidingWindowType: 'TIME_BASED', slidingWindowSize: 60 } as const;

interface Footprint {
  readonly label: string;
  readonly heap: number;
  readonly arrayBuffers: number;
}

/**
 * Heap cost of 10,000 named TIME_BASED (60 s) circuit breakers in one
 * registry, each having recorded a few calls. The windows'
 * typed arrays live in ArrayBuffer backing stores outside the JS heap, so
 * the figure held against the target is heap + array buffers.
 */
export const memory: BenchSection = {
  name: 'memory',
  summary: `heap of ${BREAKERS.toLocaleString('en-US')} named TIME_BASED (60 s) breakers`,
  async run() {
    const rows: Footprint[] = [];
    rows.push(
      await footprint('undeclared names, configs.default', () => ({
        circuitBreaker: { configs: { default: TIME_BASED_60S } },
      })),
    );
    rows.push(
      await footprint('each declared under instances', (names) => ({
        circuitBreaker: {
          configs: { default: TIME_BASED_60S },
          instances: Object.fromEntries(names.map((n) => [n, {}])),
        },
      })),
    );

    printHeading(
      `Memory — ${BREAKERS.toLocaleString('en-US')} TIME_BASED (60 s) breakers, ${CALLS_PER_BREAKER} calls recorded in each`,
    );
    printTable(
      [
        { heading: 'breakers', align: 'left' },
        { heading: 'JS heap MB' },
        { heading: 'array buffers MB' },
        { heading: 'total MB' },
        { heading: 'bytes/breaker' },
      ],
      rows.map((r) => [
        r.label,
        (r.heap / MB).toFixed(2),
        (r.arrayBuffers / MB).toFixed(2),
        ((r.heap + r.arrayBuffers) / MB).toFixed(2),
        Math.round((r.heap + r.arrayBuffers) / BREAKERS).toLocaleString('en-US'),
      ]),
    );
    console.log('');
    const worst = Math.max(...rows.map((r) => r.heap + r.arrayBuffers));
    console.log(
      verdict(
        `< ${TARGET_MB} MB (heap + array buffers, worst row)`,
        `${(worst / MB).toFixed(2)} MB`,
        worst < TARGET_MB * MB,
      ),
    );
    console.log('');
    console.log(
      'Delta of process.memoryUsage() after forced full GCs, with the registry still referenced; ' +
        'includes the options object, names, registry map entries, breakers and windows. MB = 10⁶ bytes.',
    );
  },
};

/**
 * Makes the names, builds a registry from `options(names)`, creates every
 * breaker and records calls in each; returns what stays allocated.
 */
async function footprint(
  label: string,
  options: (names: readonly string[]) => ResilienceModuleOptions,
): Promise<Footprint> {
  collectGarbage();
  const before = process.memoryUsage();
  const names = Array.from({ length: BREAKERS }, (_, i) => `breaker-${i}`);
  const registry = new ResilienceRegistry(options(names));
  const failure = new Error('recorded failure');
  const succeed = (): Promise<string> => Promise.resolve('ok');
  const fail = (): Promise<string> => Promise.reject(failure);
  for (const name of names) {
    const breaker = registry.circuitBreaker(name);
    for (let i = 1; i < CALLS_PER_BREAKER; i++) await breaker.execute(succeed);
    await breaker.execute(fail).catch(() => undefined);
  }
  collectGarbage();
  const after = process.memoryUsage();

  // The registry is still referenced here, so what was measured is what it holds; check it holds what we claim.
  const breakers = registry.all('circuitBreaker');
  const wrong = breakers.filter(
    (b) =>
      b.config.slidingWindowType !== 'TIME_BASED' ||
      b.config.slidingWindowSize !== 60 ||
      b.state !== 'CLOSED' ||
      b.metrics.numberOfBufferedCalls !== CALLS_PER_BREAKER ||
      b.metrics.numberOfFailedCalls !== 1,
  );
  if (breakers.length !== names.length || wrong.length > 0) {
    throw new Error(
      `memory bench (${label}): ${breakers.length} breakers, ${wrong.length} not TIME_BASED 60 s with ${CALLS_PER_BREAKER} recorded calls`,
    );
  }
  return { label, heap: after.heapUsed - before.heapUsed, arrayBuffers: after.arrayBuffers - before.arrayBuffers };
}
