import 'reflect-metadata';
import { allocation } from './allocation';
import { breakerFleet } from './breaker-fleet';
import { cache } from './cache';
import { cancellation } from './cancellation';
import { idempotency } from './idempotency';
import { layers } from './layers';
import { memory } from './memory';
import { metrics } from './metrics';
import { observable } from './observable';
import { outbox } from './outbox';
import { overhead } from './overhead';
import { refusals } from './refusals';
import { rateLimiterRedis } from './rate-limiter-redis';
import { printEnvironment } from './report';
import { BenchSection } from './section';
import { shedding } from './shedding';
import { tracing } from './tracing';

/** Every section, in the order `npm run bench` runs them. Add new ones here. */
const SECTIONS: readonly BenchSection[] = [
  overhead,
  allocation,
  cancellation,
  refusals,
  layers,
  memory,
  idempotency,
  metrics,
  shedding,
  observable,
  rateLimiterRedis,
  breakerFleet,
  tracing,
  outbox,
  cache,
];

/**
 * `npm run bench` runs every section; `npm run bench -- overhead memory`
 * runs the named ones. Figures are printed, never asserted: the exit code
 * says only whether the bench ran and the measured paths behaved.
 */
async function main(args: readonly string[]): Promise<void> {
  const help = args.includes('--help') || args.includes('-h');
  const unknown = args.filter((a) => a !== '--help' && a !== '-h' && !SECTIONS.some((s) => s.name === a));
  if (help || unknown.length > 0) {
    console.error(
      `usage: npm run bench [-- <section>...]\nsections:\n${SECTIONS.map((s) => `  ${s.name.padEnd(10)} ${s.summary}`).join('\n')}`,
    );
    if (unknown.length > 0) {
      console.error(`unknown section: ${unknown.join(', ')}`);
      process.exitCode = 2;
    }
    return;
  }
  const chosen = args.length === 0 ? SECTIONS : SECTIONS.filter((s) => args.includes(s.name));
  printEnvironment();
  for (const section of chosen) await section.run();
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
