import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { breaker } from './breaker';
import { bulkhead } from './bulkhead';
import { fleet } from './fleet';
import { hedging } from './hedging';
import { ScenarioReport } from './kit';
import { overcharge } from './overcharge';
import { outboxScenario } from './outbox';
import { adaptiveDefaults, overload } from './overload';
import { retryAmplification } from './retry-amplification';
import { retryStorm } from './retry-storm';

/*
 * `npm run scenario -- <name>` (or `all`): runs the experiments of
 * docs/scenarios.md against the real module on a virtual clock, prints each
 * table with the reference model's figures beside ours, and writes each
 * chart to scenario-output/<name>.svg.
 */

/** A runnable scenario. */
export interface ScenarioEntry {
  readonly name: string;
  readonly summary: string;
  readonly run: () => Promise<ScenarioReport>;
}

/** Every scenario, in the order of docs/scenarios.md; `all` runs them in turn. */
export const SCENARIOS: readonly ScenarioEntry[] = [
  {
    name: 'retry-storm',
    summary: 'a one-minute spike with no retries, unbudgeted retries and a 10% retry budget',
    run: retryStorm,
  },
  {
    name: 'overcharge',
    summary: '100 payments with 40% of replies lost: one idempotency key per payment versus a key per attempt',
    run: overcharge,
  },
  {
    name: 'breaker',
    summary: 'thread-seconds and calls reaching a dependency down for 30 s, without and with a breaker',
    run: breaker,
  },
  {
    name: 'fleet',
    summary:
      '10 replicas behind a dependency failing for 60 s: local breakers versus a fleet breaker at quorum 1 and 3, and one replica with a broken network',
    run: fleet,
  },
  {
    name: 'bulkhead',
    summary:
      'a reviews call slowing to 4 s stalls every endpoint of a 200-worker server, unless a bulkhead of 40 guards it',
    run: bulkhead,
  },
  {
    name: 'overload',
    summary:
      'a server of fixed capacity offered 1×, 2× and 3× of it, without shedding and with a fixed cap or an adaptive limit',
    run: overload,
  },
  {
    name: 'adaptive-defaults',
    summary: 'Gradient2 and Vegas on their defaults at 3× capacity against fixed caps around the pool size',
    run: adaptiveDefaults,
  },
  {
    name: 'retry-amplification',
    summary: 'three layers of 3 attempts against a failing service (27 calls) versus one layer with a budget',
    run: retryAmplification,
  },
  {
    name: 'hedging',
    summary:
      'a 5% slow tail (10x the median): caller p99/p99.9 with and without hedging at the p95, and the budget under overload',
    run: hedging,
  },
  {
    name: 'outbox',
    summary:
      'orders through the transactional outbox on PostgreSQL with random crashes and broker outages: none lost, none applied twice',
    run: outboxScenario,
  },
];

/** Where the charts go (ignored by git). */
export const OUTPUT_DIR = join(__dirname, '..', 'scenario-output');

/** The scenarios `arg` names: one, or every one for `all`; `undefined` for an unknown name. */
export function selectScenarios(arg: string | undefined): readonly ScenarioEntry[] | undefined {
  if (arg === 'all') return SCENARIOS;
  const one = SCENARIOS.find((s) => s.name === arg);
  return one === undefined ? undefined : [one];
}

/** The usage text, listing every scenario. */
export function usage(): string {
  const width = Math.max(...SCENARIOS.map((s) => s.name.length), 3);
  return [
    'usage: npm run scenario -- <name>',
    '',
    ...SCENARIOS.map((s) => `  ${s.name.padEnd(width)}  ${s.summary}`),
    `  ${'all'.padEnd(width)}  every scenario above, in turn`,
    '',
    `Charts are written to ${relative(process.cwd(), OUTPUT_DIR) || '.'}/<name>.svg.`,
  ].join('\n');
}

/** Runs the scenarios named by `arg`, printing through `print` and writing charts to `outDir`; returns the exit code. */
export async function main(
  arg: string | undefined,
  print: (text: string) => void = console.log,
  outDir = OUTPUT_DIR,
): Promise<number> {
  if (arg === undefined || arg === '--help' || arg === '-h') {
    print(usage());
    return 0;
  }
  const selected = selectScenarios(arg);
  if (selected === undefined) {
    print(`unknown scenario '${arg}'\n\n${usage()}`);
    return 1;
  }
  mkdirSync(outDir, { recursive: true });
  const started = performance.now();
  for (const scenario of selected) {
    const t0 = performance.now();
    const report = await scenario.run();
    const file = join(outDir, `${scenario.name}.svg`);
    writeFileSync(file, report.svg);
    const elapsed = ((performance.now() - t0) / 1000).toFixed(1);
    print(`${report.table}\nchart: ${relative(process.cwd(), file)}   (${elapsed} s)\n`);
  }
  if (selected.length > 1)
    print(`${selected.length} scenarios in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

if (require.main === module) {
  main(process.argv[2]).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
