import { Session } from 'node:inspector/promises';
import { ResilienceRegistry } from '../lib';
import { Column, printHeading, printTable } from './report';
import { BenchSection } from './section';
import { BENCH_OPTIONS, benchPipeline, bootNest } from './subjects';

const WARM_UP_CALLS = 200_000;
const SAMPLED_CALLS = 300_000;
/** Bytes between two heap samples: small enough that a call's every allocation is seen over the sampled calls. */
const SAMPLING_INTERVAL = 64;

interface HeapProfileNode {
  readonly selfSize: number;
  readonly children: readonly HeapProfileNode[];
}

/**
 * Bytes allocated per happy-path call, by V8's sampling heap profiler with
 * the objects young-generation collections freed counted in: what a call
 * costs the garbage collector, which the ns figures fold into their time.
 */
export const allocation: BenchSection = {
  name: 'allocation',
  summary: 'bytes allocated per happy-path call: bare vs @Retry+@Timeout vs the full stack',
  async run() {
    const { app, service } = await bootNest();
    const registry = new ResilienceRegistry(BENCH_OPTIONS);
    const bare = (): Promise<number> => service.bare(1);
    const pipeline = benchPipeline(registry, service);
    const candidates: (readonly [string, () => Promise<unknown>])[] = [
      ['bare async method', bare],
      ['@Retry + @Timeout', () => service.retryTimeout(1)],
      ['full stack (decorators)', () => service.fullStack(1)],
      ['full stack (registry.pipeline)', () => pipeline.execute(bare)],
    ];
    const session = new Session();
    session.connect();
    try {
      const rows: [string, number][] = [];
      for (const [label, call] of candidates) {
        process.stderr.write(`allocation: ${label}\n`);
        for (let i = 0; i < WARM_UP_CALLS; i++) await call();
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: SAMPLING_INTERVAL,
          includeObjectsCollectedByMinorGC: true,
          includeObjectsCollectedByMajorGC: true,
        });
        for (let i = 0; i < SAMPLED_CALLS; i++) await call();
        const { profile } = await session.post('HeapProfiler.stopSampling');
        rows.push([label, totalSize(profile.head) / SAMPLED_CALLS]);
      }
      if (service.fallbacks !== 0)
        throw new Error(`allocation bench left the happy path: ${service.fallbacks} fallbacks`);
      printHeading('Bytes allocated per call (happy path)');
      const bareBytes = rows[0][1];
      const columns: Column[] = [{ heading: 'path', align: 'left' }, { heading: 'B/call' }, { heading: 'added B' }];
      printTable(
        columns,
        rows.map(([label, bytes]) => [
          label,
          bytes.toFixed(0),
          label === candidates[0][0] ? '—' : (bytes - bareBytes).toFixed(0),
        ]),
      );
      console.log('');
      console.log(
        `V8's sampling heap profiler (interval ${SAMPLING_INTERVAL} B, objects freed by collections included), ` +
          `${SAMPLED_CALLS.toLocaleString('en')} sequential awaited calls after ${WARM_UP_CALLS.toLocaleString('en')} to warm up; ` +
          'the bare row includes the benchmark loop’s own await.',
      );
    } finally {
      session.disconnect();
      registry.dispose();
      await app.close();
    }
  },
};

function totalSize(node: HeapProfileNode): number {
  let size = node.selfSize;
  for (const child of node.children) size += totalSize(child);
  return size;
}
