/**
 * Worker for the cancellation section, run in its own process per group:
 * a group that enters an AsyncLocalStorage context would slow every promise
 * of the process after it (on Node.js 20), so each one is timed where no
 * other has run. Prints its measurements as JSON on stdout.
 */
import { ResilienceRegistry } from '../lib';
import { Candidate, measure } from './measure';

/** The groups, each timed in a fresh process beside the bare call. */
export const CANCELLATION_GROUPS = ['auto', 'always', 'caller'] as const;
export type CancellationGroup = (typeof CANCELLATION_GROUPS)[number];

export const LABELS = {
  bare: 'bare async call',
  auto: 'time limit, fn takes no signal',
  autoSignal: 'time limit, fn reads its signal',
  always: "time limit, attemptContext 'always'",
  caller: 'time limit, execute(fn, { signal })',
} as const;

async function bare(x: number): Promise<number> {
  return x + 1;
}

async function main(group: CancellationGroup): Promise<void> {
  const options = group === 'always' ? { deadline: { attemptContext: 'always' as const } } : {};
  const registry = new ResilienceRegistry(options);
  const pipeline = registry.pipeline({ timeLimiter: { timeoutDuration: '1s' } });
  const controller = new AbortController();
  const candidates: Candidate[] = [{ label: LABELS.bare, call: () => bare(1), expect: 2 }];
  if (group === 'auto') {
    candidates.push({ label: LABELS.auto, call: () => pipeline.execute(() => bare(1)), expect: 2 });
    candidates.push({
      label: LABELS.autoSignal,
      call: () => pipeline.execute((signal) => bare(signal.aborted ? 0 : 1)),
      expect: 2,
    });
  } else if (group === 'always') {
    candidates.push({ label: LABELS.always, call: () => pipeline.execute(() => bare(1)), expect: 2 });
  } else {
    candidates.push({
      label: LABELS.caller,
      call: () => pipeline.execute(() => bare(1), { signal: controller.signal }),
      expect: 2,
    });
  }
  try {
    process.stdout.write(JSON.stringify(await measure(candidates)));
  } finally {
    registry.dispose();
  }
}

if (require.main === module) {
  const group = process.argv[2] as CancellationGroup;
  if (!CANCELLATION_GROUPS.includes(group)) {
    console.error(`usage: cancellation-worker.ts <${CANCELLATION_GROUPS.join('|')}>`);
    process.exitCode = 2;
  } else {
    main(group).catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  }
}
