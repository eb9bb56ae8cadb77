import { ResilienceRegistry } from '../lib';
import { FRESH_BARE_LABEL } from './fresh-peers';
import { DECORATED_CALLS } from './process-tax';
import { Measurement, measure, measureInFreshProcess } from './measure';
import { PEER_LABELS, peers } from './peers';
import { Column, ns, printHeading, printTable, spread, times, verdict } from './report';
import { BenchSection } from './section';
import { BENCH_OPTIONS, benchPipeline, bootNest } from './subjects';

const RETRY_TIMEOUT_ADDED_NS = 1500;
const FULL_STACK_ADDED_NS = 400;
const FULL_STACK_VS_COCKATIEL = 25;
const FULL_STACK_VS_OPOSSUM = 2;
const PROCESS_TAX = 1.1;
const RATE_LIMITER_ADDED_NS = 150;
const PIPELINE_VS_DECORATORS = 1.1;

const OURS = {
  bare: 'bare async method',
  retryTimeout: '@Retry + @Timeout',
  fullStack: 'full stack (decorators)',
  rateLimited: 'full stack + @RateLimiter',
  registry: 'full stack (registry execute)',
  pipeline: 'full stack (registry.pipeline)',
  keyed: 'full stack, breaker + bulkhead per key',
} as const;

/** Hosts the keyed stack cycles through: every key is kept, so each call finds its key. */
const HOSTS = Array.from({ length: 16 }, (_, i) => `host-${i}.example`);

/** Where a figure was measured: a fresh process that never loaded this module, or this one after ours ran. */
type Process = 'fresh' | 'this';

interface Row {
  readonly m: Measurement;
  readonly process: Process;
}

/**
 * Happy-path cost per call of the decorated pipelines against the bare
 * method, cockatiel 3 and opossum 9.
 *
 * The bare method and the peers are also timed in a fresh process that never
 * loaded this module (the process a peer's user has), and "added" is measured
 * from that bare call; the bare call timed again in this process, after the
 * decorated calls ran, shows whether they left a tax on every promise (on
 * Node 20 an AsyncLocalStorage that ran once hooks every promise for good).
 * Within each process, candidates are timed in interleaved rounds.
 */
export const overhead: BenchSection = {
  name: 'overhead',
  summary: 'ns per call: bare vs @Retry+@Timeout; full stack vs cockatiel wrap and opossum',
  async run() {
    // First, while this process is idle, so the two never compete for a core.
    const fresh = await measureInFreshProcess('fresh-peers.ts');
    const taxed = await measureInFreshProcess<{ before: Measurement[]; after: Measurement[] }>('process-tax.ts');
    const inProcess = await measureWithResilience();

    const get = (rows: readonly Measurement[], label: string): Measurement => {
      const m = rows.find((r) => r.label === label);
      if (m === undefined) throw new Error(`no measurement labelled "${label}"`);
      return m;
    };
    const freshBare = get(fresh, FRESH_BARE_LABEL);
    const hereBare = get(inProcess, OURS.bare);
    const columns: Column[] = [
      { heading: 'path', align: 'left' },
      { heading: 'process', align: 'left' },
      { heading: 'ns/call' },
      { heading: 'added ns' },
      { heading: 'ratio to bare' },
      { heading: 'spread' },
    ];
    const line = ({ m, process }: Row): string[] =>
      m === freshBare
        ? [m.label, process, ns(m.nsPerCall), '—', '1.00×', spread(m.spread)]
        : [
            m.label,
            process,
            ns(m.nsPerCall),
            ns(m.nsPerCall - freshBare.nsPerCall),
            times(m.nsPerCall / freshBare.nsPerCall),
            spread(m.spread),
          ];
    const bareRows: Row[] = [
      { m: freshBare, process: 'fresh' },
      { m: hereBare, process: 'this' },
    ];

    printHeading('Bare vs @Retry + @Timeout (happy path)');
    const retryTimeout = get(inProcess, OURS.retryTimeout);
    const issue2: Row[] = [...bareRows, { m: retryTimeout, process: 'this' }];
    printTable(columns, issue2.map(line));
    const added2 = retryTimeout.nsPerCall - freshBare.nsPerCall;
    console.log('');
    console.log(
      verdict(
        `added ≤ ${RETRY_TIMEOUT_ADDED_NS} ns (vs bare, fresh process)`,
        `${ns(added2)} ns`,
        added2 <= RETRY_TIMEOUT_ADDED_NS,
      ),
    );
    console.log(
      `  vs bare in this process: ${ns(retryTimeout.nsPerCall - hereBare.nsPerCall)} ns added, ${times(retryTimeout.nsPerCall / hereBare.nsPerCall)}`,
    );

    printHeading('Full stack vs bare, cockatiel 3 wrap and opossum 9 (happy path)');
    const full = get(inProcess, OURS.fullStack);
    const peerLabels = [PEER_LABELS.cockatielConsecutive, PEER_LABELS.cockatielSampling, PEER_LABELS.opossum];
    const issue3: Row[] = [
      ...bareRows,
      { m: full, process: 'this' },
      { m: get(inProcess, OURS.registry), process: 'this' },
      { m: get(inProcess, OURS.pipeline), process: 'this' },
      ...peerLabels.map((l): Row => ({ m: get(fresh, l), process: 'fresh' })),
      ...peerLabels.map((l): Row => ({ m: get(inProcess, l), process: 'this' })),
    ];
    printTable(columns, issue3.map(line));
    const fullAdded = full.nsPerCall - freshBare.nsPerCall;
    console.log('');
    console.log(
      verdict(
        `full stack adds ≤ ${FULL_STACK_ADDED_NS} ns (vs bare, fresh process)`,
        `${ns(fullAdded)} ns`,
        fullAdded <= FULL_STACK_ADDED_NS,
      ),
    );
    console.log(`  vs bare in this process: ${ns(full.nsPerCall - hereBare.nsPerCall)} ns added`);
    // What each stack adds to the call decides, with the peer timed in this process, interleaved with ours.
    const fullAddedHere = full.nsPerCall - hereBare.nsPerCall;
    const peerTargets: [string, number][] = [
      [PEER_LABELS.cockatielConsecutive, FULL_STACK_VS_COCKATIEL],
      [PEER_LABELS.cockatielSampling, FULL_STACK_VS_COCKATIEL],
      [PEER_LABELS.opossum, FULL_STACK_VS_OPOSSUM],
    ];
    for (const [label, target] of peerTargets) {
      const here = get(inProcess, label);
      const addedRatio = (here.nsPerCall - hereBare.nsPerCall) / fullAddedHere;
      console.log(
        verdict(
          `≥ ${target}× cheaper than ${label} (added ns, peer in this process)`,
          `${ns(fullAddedHere)} vs ${ns(here.nsPerCall - hereBare.nsPerCall)} ns (${times(addedRatio)})`,
          addedRatio >= target,
        ),
      );
      const elsewhere = get(fresh, label);
      console.log(
        `  per-call ratio ${times(here.nsPerCall / full.nsPerCall)}; with the peer in a fresh process: ` +
          `per-call ${times(elsewhere.nsPerCall / full.nsPerCall)}, added ${times((elsewhere.nsPerCall - freshBare.nsPerCall) / fullAdded)}`,
      );
    }
    const codePipeline = get(inProcess, OURS.pipeline);
    console.log(
      verdict(
        `registry.pipeline within ${Math.round((PIPELINE_VS_DECORATORS - 1) * 100)} % of the decorators (per-call time, same process)`,
        times(codePipeline.nsPerCall / full.nsPerCall),
        codePipeline.nsPerCall <= full.nsPerCall * PIPELINE_VS_DECORATORS,
      ),
    );

    printHeading('Instances per key: the full stack with its breaker and bulkhead per host (16 hosts, all kept)');
    const keyed = get(inProcess, OURS.keyed);
    const keyedRows: Row[] = [...bareRows, { m: full, process: 'this' }, { m: keyed, process: 'this' }];
    printTable(columns, keyedRows.map(line));
    console.log('');
    console.log(
      `  a kept key adds ${ns(keyed.nsPerCall - full.nsPerCall)} ns to the unkeyed stack; ratio to the bare call ` +
        `(this process): unkeyed ${times(full.nsPerCall / hereBare.nsPerCall)}, keyed ${times(keyed.nsPerCall / hereBare.nsPerCall)}`,
    );
    // A call whose key is kept is held to the full stack's own targets.
    const keyedAddedHere = keyed.nsPerCall - hereBare.nsPerCall;
    console.log(
      verdict(
        `keyed full stack adds ≤ ${FULL_STACK_ADDED_NS} ns (vs bare, fresh process)`,
        `${ns(keyed.nsPerCall - freshBare.nsPerCall)} ns`,
        keyed.nsPerCall - freshBare.nsPerCall <= FULL_STACK_ADDED_NS,
      ),
    );
    for (const [label, target] of peerTargets) {
      const peerAdded = get(inProcess, label).nsPerCall - hereBare.nsPerCall;
      console.log(
        verdict(
          `keyed full stack ≥ ${target}× cheaper than ${label} (added ns, peer in this process)`,
          `${ns(keyedAddedHere)} vs ${ns(peerAdded)} ns (${times(peerAdded / keyedAddedHere)})`,
          peerAdded / keyedAddedHere >= target,
        ),
      );
    }

    printHeading(
      `No tax on the process: the same calls before and after ${DECORATED_CALLS.toLocaleString('en-US')} decorated calls`,
    );
    const taxColumns: Column[] = [
      { heading: 'path', align: 'left' },
      { heading: 'before ns/call' },
      { heading: 'after ns/call' },
      { heading: 'after / before' },
    ];
    const taxRows = taxed.before.map((b) => {
      const a = get(taxed.after, b.label);
      return {
        label: b.label,
        ratio: a.nsPerCall / b.nsPerCall,
        row: [b.label, ns(b.nsPerCall), ns(a.nsPerCall), times(a.nsPerCall / b.nsPerCall)],
      };
    });
    printTable(
      taxColumns,
      taxRows.map((r) => r.row),
    );
    console.log('');
    for (const r of taxRows)
      console.log(
        verdict(`${r.label} after our calls ≤ ${PROCESS_TAX}× before`, times(r.ratio), r.ratio <= PROCESS_TAX),
      );

    printHeading('Full stack with @RateLimiter added (happy path)');
    const rateLimited = get(inProcess, OURS.rateLimited);
    const withLimiter: Row[] = [...bareRows, { m: full, process: 'this' }, { m: rateLimited, process: 'this' }];
    printTable(columns, withLimiter.map(line));
    const limiterAdded = rateLimited.nsPerCall - full.nsPerCall;
    console.log('');
    console.log(
      verdict(
        `@RateLimiter adds ≤ ${RATE_LIMITER_ADDED_NS} ns to the full stack`,
        `${ns(limiterAdded)} ns`,
        limiterAdded <= RATE_LIMITER_ADDED_NS,
      ),
    );

    console.log('');
    console.log(
      [
        `Sequential awaited calls of a trivial async method (a Nest provider's; a plain class's in the fresh process).`,
        `Median of ${full.rounds.length} interleaved rounds after warm-up; spread = (slowest − fastest round) / median.`,
        `In the tables "added" and "ratio" are against the bare call in the fresh process. "fresh": a node process that`,
        `never loaded this module; "this": this process, after our decorated calls (no request deadline, so no`,
        `AsyncLocalStorage). The peer verdicts compare what each stack adds to the bare call of the process it ran in.`,
        `Full stack = @Fallback, @Retry (3 attempts), @CircuitBreaker (COUNT_BASED 100), @Timeout (1 s), @Bulkhead (25);`,
        `registry.pipeline: the same four instances and a fallback, composed in code (no decorators).`,
        `cockatiel's wrap has no fallback layer; opossum is one breaker with timeout 1 s and capacity 25.`,
        `@RateLimiter: Resilience4j's defaults (50 permits per 500 ns, 5 s timeout), never refusing sequential calls.`,
      ].join('\n'),
    );
  },
};

/** Boots the Nest app and times our paths, plus the peers for reference, in this process. */
async function measureWithResilience(): Promise<Measurement[]> {
  const { app, service } = await bootNest();
  const bare = (): Promise<number> => service.bare(1);
  // The programmatic path: the same policies from a registry built without Nest, composed by hand.
  const registry = new ResilienceRegistry(BENCH_OPTIONS);
  const retry = registry.retry('bench');
  const breaker = registry.circuitBreaker('bench');
  const limiter = registry.timeLimiter('bench');
  const bulkhead = registry.bulkhead('bench');
  const pipeline = benchPipeline(registry, service);
  const peerSet = peers(bare);
  let next = 0;
  try {
    const results = await measure([
      { label: OURS.bare, call: bare, expect: 2 },
      { label: OURS.retryTimeout, call: () => service.retryTimeout(1), expect: 2 },
      { label: OURS.fullStack, call: () => service.fullStack(1), expect: 2 },
      { label: OURS.rateLimited, call: () => service.fullStackRateLimited(1), expect: 2 },
      {
        label: OURS.registry,
        // Composed by hand, as a user of the registry's instances would: the fallback is a catch.
        call: () =>
          retry
            .execute(() => breaker.execute(() => limiter.execute(() => bulkhead.execute(bare))))
            .catch(() => service.fallback(1, undefined)),
        expect: 2,
      },
      { label: OURS.pipeline, call: () => pipeline.execute(bare), expect: 2 },
      { label: OURS.keyed, call: () => service.fullStackKeyed(1, HOSTS[next++ & 15]), expect: 2 },
      ...peerSet.candidates,
    ]);
    // Every path must have stayed on the happy path, or the figures mean something else.
    checkHappyPath('decorators', app.get(ResilienceRegistry), service.fallbacks);
    checkHappyPath('registry', registry, service.fallbacks);
    peerSet.verifyHappyPath();
    return results;
  } finally {
    peerSet.close();
    registry.dispose();
    await app.close();
  }
}

/** The named 'bench' instances of `registry` saw only first-attempt successes and no fallback ran. */
function checkHappyPath(where: string, registry: ResilienceRegistry, fallbacks: number): void {
  const retried = registry.retry('bench').metrics;
  const breaker = registry.circuitBreaker('bench');
  const bulkhead = registry.bulkhead('bench').metrics;
  const off =
    retried.successfulCallsWithRetry + retried.failedCallsWithRetry + retried.failedCallsWithoutRetry > 0 ||
    breaker.state !== 'CLOSED' ||
    breaker.metrics.numberOfFailedCalls > 0 ||
    bulkhead.availableConcurrentCalls !== bulkhead.maxAllowedConcurrentCalls ||
    fallbacks > 0 ||
    registry.rateLimiter('bench').metrics.numberOfWaitingThreads > 0;
  if (off) {
    throw new Error(
      `${where} left the happy path: ${JSON.stringify({ retried, state: breaker.state, bulkhead, fallbacks })}`,
    );
  }
}
