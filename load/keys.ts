import { Registry } from 'prom-client';
import { ResilienceMetricsBinding, ResilienceRegistry } from '../lib';

/*
 * npm run load -- keys [distinct keys]: drives that many distinct keys
 * (default 10,000) through a per-key circuit breaker as fast as the process
 * runs, with keys.max at 1,000 and the metrics bound with perKey, and shows
 * that the heap and the metrics endpoint stop growing once max keys are
 * kept: the least recently used idle key is evicted for each new one.
 * Progress goes to stderr; the table to stdout. Run with --expose-gc for
 * steady heap figures (npm run load passes it when it can).
 */

const MAX_KEYS = 1000;
const CALLS_PER_KEY = 3;
const SAMPLE_EVERY = 1000;

interface Sample {
  keysDriven: number;
  keysKept: number;
  heapBytes: number;
  metricsBytes: number;
  keyedSeries: number;
}

function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

export async function keys(distinct: number): Promise<void> {
  const registry = new ResilienceRegistry({
    circuitBreaker: {
      keys: { max: MAX_KEYS, idleTimeout: '10m' },
      instances: { payments: { slidingWindowSize: 10, minimumNumberOfCalls: 10 } },
    },
  });
  const prom = new Registry();
  const binding = new ResilienceMetricsBinding(registry, { registry: prom, perKey: true });
  const perHost = registry.pipeline({ circuitBreaker: 'payments' }, { key: (host: string) => host });
  const ok = (): Promise<number> => Promise.resolve(1);
  const sample = async (driven: number): Promise<Sample> => {
    const text = await prom.metrics();
    return {
      keysDriven: driven,
      keysKept: registry.keys('circuitBreaker', 'payments').size,
      heapBytes: heapUsed(),
      metricsBytes: Buffer.byteLength(text),
      keyedSeries: text.split('\n').filter((line) => line.includes('key="')).length,
    };
  };
  const baseline = await sample(0);
  const samples: Sample[] = [];
  const started = process.hrtime.bigint();
  for (let i = 1; i <= distinct; i++) {
    const host = `host-${i}.example`;
    for (let c = 0; c < CALLS_PER_KEY; c++) await perHost.execute(ok, { args: [host] });
    if (i % SAMPLE_EVERY === 0 || i === distinct) {
      const s = await sample(i);
      samples.push(s);
      process.stderr.write(
        `keys: ${i.toLocaleString('en-US')}/${distinct.toLocaleString('en-US')} driven, ${s.keysKept} kept, ` +
          `heap ${(s.heapBytes / 1e6).toFixed(1)} MB, metrics ${(s.metricsBytes / 1e3).toFixed(1)} kB\n`,
      );
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  binding.close();
  const atMax = samples.find((s) => s.keysDriven >= MAX_KEYS) ?? samples[0];
  const last = samples[samples.length - 1];
  const perKey = (atMax.heapBytes - baseline.heapBytes) / atMax.keysKept;
  const rows = [
    ['keys driven', 'keys kept', 'heap MB', 'heap over baseline MB', 'metrics kB', 'series with key'],
    ...[baseline, ...samples].map((s) => [
      s.keysDriven.toLocaleString('en-US'),
      String(s.keysKept),
      (s.heapBytes / 1e6).toFixed(1),
      ((s.heapBytes - baseline.heapBytes) / 1e6).toFixed(1),
      (s.metricsBytes / 1e3).toFixed(1),
      String(s.keyedSeries),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  console.log(
    `\n${distinct.toLocaleString('en-US')} distinct keys, ${CALLS_PER_KEY} calls each, through a per-key breaker (keys.max ${MAX_KEYS}, metrics.perKey)`,
  );
  for (const [i, row] of rows.entries()) {
    console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
  console.log('');
  console.log(
    `bytes per kept key (heap at ${atMax.keysDriven.toLocaleString('en-US')} keys over baseline / keys kept): ${Math.round(perKey).toLocaleString('en-US')}`,
  );
  console.log(
    `heap growth from ${atMax.keysDriven.toLocaleString('en-US')} to ${last.keysDriven.toLocaleString('en-US')} keys: ${((last.heapBytes - atMax.heapBytes) / 1e6).toFixed(1)} MB`,
  );
  console.log(
    `metrics size from ${atMax.keysDriven.toLocaleString('en-US')} to ${last.keysDriven.toLocaleString('en-US')} keys: ${(atMax.metricsBytes / 1e3).toFixed(1)} → ${(last.metricsBytes / 1e3).toFixed(1)} kB`,
  );
  console.log(
    `${Math.round((distinct * CALLS_PER_KEY) / seconds).toLocaleString('en-US')} calls/s, ${seconds.toFixed(1)} s`,
  );
}
