import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  Bulkhead,
  Cache,
  CircuitBreaker,
  Fallback,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  Timeout,
} from '../lib';
import { collectGarbage, measure } from './measure';
import { ns, printHeading, printTable, spread, times } from './report';
import { BenchSection } from './section';
import { BENCH_OPTIONS } from './subjects';

const WAITERS = 1_000;

const OPTIONS: ResilienceModuleOptions = {
  ...BENCH_OPTIONS,
  cache: {
    instances: {
      hit: { ttl: '1h' },
      stack: { ttl: '1h' },
      shared: { coalesce: true },
    },
  },
};

/** One trivial body, bare, cached alone, under the full stack, and under the full stack with a cache outside the retry. */
@Injectable()
class CachedService {
  downstream = 0;
  private release: () => void = () => undefined;

  async bare(x: number): Promise<number> {
    return x + 1;
  }

  @Cache('hit')
  async cached(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  @Retry('bench')
  @CircuitBreaker('bench')
  @Timeout('bench')
  @Bulkhead('bench')
  async fullStack(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  @Cache('stack')
  @Retry('bench')
  @CircuitBreaker('bench')
  @Timeout('bench')
  @Bulkhead('bench')
  async fullStackCached(x: number): Promise<number> {
    return x + 1;
  }

  /** Answers when {@link CachedService.open} is called: every caller waits on one slow downstream call. */
  @Cache('shared')
  async slow(key: string): Promise<string> {
    this.downstream++;
    await new Promise<void>((resolve) => (this.release = resolve));
    return key;
  }

  open(): void {
    this.release();
  }

  fallback(): number {
    return -1;
  }
}

@Module({ imports: [ResilienceModule.forRoot(OPTIONS)], providers: [CachedService] })
class CacheBenchModule {}

/** Heap held per waiter while `count` callers wait on one coalesced call, and the downstream calls made. */
async function coalescing(service: CachedService, count: number): Promise<{ bytesPerWaiter: number; calls: number }> {
  const before = service.downstream;
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  const waiting = Array.from({ length: count }, () => service.slow('sku-1'));
  collectGarbage();
  const heapDuring = process.memoryUsage().heapUsed;
  service.open();
  const answers = await Promise.all(waiting);
  if (answers.some((a) => a !== 'sku-1')) throw new Error('a coalesced caller got another answer');
  return { bytesPerWaiter: (heapDuring - heapBefore) / count, calls: service.downstream - before };
}

/**
 * A cache hit's cost beside a bare call and beside the full stack (fallback,
 * retry, breaker, time limit, bulkhead) with and without a cache answering
 * in front of it; then 1,000 concurrent callers of one key on a coalescing
 * cache: the downstream calls made and the heap each waiter holds.
 */
export const cache: BenchSection = {
  name: 'cache',
  summary: `ns per call of a cache hit vs a bare call and the full stack; ${WAITERS.toLocaleString('en-US')} coalesced callers`,
  async run() {
    const app = await NestFactory.createApplicationContext(CacheBenchModule, { logger: false });
    const service = app.get(CachedService);
    let results;
    let shared;
    try {
      await service.cached(1);
      await service.fullStackCached(1);
      results = await measure([
        { label: 'bare call', call: () => service.bare(1), expect: 2 },
        { label: '@Cache hit', call: () => service.cached(1), expect: 2 },
        { label: 'full stack', call: () => service.fullStack(1), expect: 2 },
        { label: 'full stack, @Cache hit', call: () => service.fullStackCached(1), expect: 2 },
      ]);
      const hits = app.get(ResilienceRegistry).cache('stack').metrics;
      if (hits.miss !== 1) throw new Error(`the cached full stack left the hit path: ${JSON.stringify(hits)}`);
      shared = await coalescing(service, WAITERS);
    } finally {
      await app.close();
    }
    const [bare, , full] = results;
    printHeading('Cache — a hit beside a bare call and the full stack');
    printTable(
      [
        { heading: 'path', align: 'left' },
        { heading: 'ns/call' },
        { heading: 'ratio to bare' },
        { heading: 'ratio to full stack' },
        { heading: 'spread' },
      ],
      results.map((m) => [
        m.label,
        ns(m.nsPerCall),
        times(m.nsPerCall / bare.nsPerCall),
        times(m.nsPerCall / full.nsPerCall),
        spread(m.spread),
      ]),
    );
    console.log('');
    printHeading(`Cache — ${WAITERS.toLocaleString('en-US')} concurrent callers of one key, coalesce: true`);
    printTable(
      [{ heading: 'callers', align: 'left' }, { heading: 'downstream calls' }, { heading: 'heap bytes per waiter' }],
      [[String(WAITERS), String(shared.calls), String(Math.round(shared.bytesPerWaiter))]],
    );
    console.log('');
    console.log(
      [
        `Sequential awaited calls on a Nest provider, median of ${bare.rounds.length} interleaved rounds; ttl 1 h, so every timed`,
        'cached call is a hit. The coalesced callers wait on one pending call; the heap is read after a full collection.',
      ].join('\n'),
    );
    if (shared.calls !== 1) throw new Error(`${WAITERS} coalesced callers made ${shared.calls} downstream calls`);
  },
};
