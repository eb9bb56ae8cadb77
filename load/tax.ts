import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { freePort, root } from './app';

/*
 * npm run load -- tax [seconds]: what importing ResilienceModule costs a
 * route that does no resilience work. The same trivial route is served by
 * an app without the module, by one that imports it (with a fully
 * decorated provider elsewhere) and by one that also configures `deadline`
 * (every request then runs in a scope that follows its deadline and its
 * client), on Express and on Fastify, each in its own process, driven
 * closed-loop by autocannon in interleaved rounds.
 */

const CONNECTIONS = 10;
const ROUNDS = 5;
const PLATFORMS = ['express', 'fastify'] as const;
const VARIANTS = ['without', 'with', 'deadline'] as const;

/** How the table and progress lines name each variant. */
const LABELS: Readonly<Record<(typeof VARIANTS)[number], string>> = {
  without: 'without the module',
  with: 'with the module',
  deadline: 'with the module and deadline: {}',
};

interface Run {
  rps: number;
  p99: number;
  /** CPU time the app's process spent per request (µs), which the machine's other load changes far less than req/s. */
  cpuPerRequest: number;
}

/** One app in its child process. */
interface App {
  readonly url: string;
  /** The CPU time (user + system, µs) the app's process has used so far. */
  cpu(): Promise<number>;
  stop(): void;
}

async function serve(platform: string, variant: (typeof VARIANTS)[number]): Promise<App> {
  const port = await freePort();
  const child = fork(join(root, 'load/tax-app.ts'), [platform, variant, String(port)], {
    cwd: root,
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the ${platform} app (${LABELS[variant]}) did not start in 120 s`)),
      120_000,
    );
    child.once('message', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`the ${platform} app (${LABELS[variant]}) exited with code ${code}`)),
    );
  });
  const cpu = () =>
    new Promise<number>((resolve) => {
      child.once('message', (used: number) => resolve(used));
      child.send('cpu');
    });
  return { url: `http://127.0.0.1:${port}/ping`, cpu, stop: () => child.kill() };
}

async function drive(app: App, seconds: number): Promise<Run> {
  const before = await app.cpu();
  const result = await autocannon({ url: app.url, connections: CONNECTIONS, duration: seconds });
  const used = (await app.cpu()) - before;
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${app.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99, cpuPerRequest: used / result.requests.total };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const percent = (share: number): string => `${(share * 100).toFixed(1)}%`;

const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

/** Runs the comparison and prints its table. */
export async function tax(seconds: number): Promise<void> {
  console.log(
    `node ${process.version}; ${CONNECTIONS} connections, ${seconds} s per run, ${ROUNDS} interleaved rounds (medians; a share is the median of each round's ratio); load average before: ${load()}`,
  );
  const rows: string[] = [];
  for (const platform of PLATFORMS) {
    const apps = await Promise.all(VARIANTS.map((variant) => serve(platform, variant)));
    try {
      for (const app of apps) await drive(app, 1);
      const runs: Run[][] = VARIANTS.map(() => []);
      for (let round = 0; round < ROUNDS; round++) {
        // Each round starts with another app, so no app always runs first (or just after the same one).
        for (let k = 0; k < apps.length; k++) {
          const i = (round + k) % apps.length;
          process.stderr.write(`${platform}, ${LABELS[VARIANTS[i]]}, round ${round + 1} of ${ROUNDS}\n`);
          runs[i][round] = await drive(apps[i], seconds);
        }
      }
      const [without, ...others] = runs;
      const p99Without = median(without.map((x) => x.p99));
      const cpuWithout = median(without.map((x) => x.cpuPerRequest));
      rows.push(
        `| ${platform} | ${LABELS.without} | ${Math.round(median(without.map((x) => x.rps))).toLocaleString('en-US')} | 100% | | ${cpuWithout.toFixed(0)} | 100% | ${p99Without} | |`,
      );
      for (const [i, other] of others.entries()) {
        // A share per round, against the run without the module of the same round: the machine's drift cancels out.
        const shares = other.map((x, round) => x.rps / without[round].rps);
        const share = median(shares);
        const cpuShare = median(other.map((x, round) => without[round].cpuPerRequest / x.cpuPerRequest));
        const p99 = median(other.map((x) => x.p99));
        rows.push(
          `| ${platform} | ${LABELS[VARIANTS[i + 1]]} | ${Math.round(median(other.map((x) => x.rps))).toLocaleString('en-US')} | ${percent(share)} ${share >= 0.95 ? '(met)' : '(NOT met)'} | ${percent(Math.min(...shares))}–${percent(Math.max(...shares))} | ${median(other.map((x) => x.cpuPerRequest)).toFixed(0)} | ${percent(cpuShare)} | ${p99} | ${p99 <= p99Without * 1.1 + 1 ? 'met' : 'NOT met'} |`,
        );
      }
    } finally {
      for (const app of apps) app.stop();
    }
  }
  console.log(
    `\nload average after: ${load()}\n\n| platform | app | req/s | share of req/s kept (target ≥ 95%) | share, lowest–highest round | app CPU µs per request | req/s per CPU second kept | p99 ms | p99 within 10% (±1 ms) |`,
  );
  console.log('|:--|:--|--:|--:|--:|--:|--:|--:|:--|');
  for (const row of rows) console.log(row);
  console.log(
    '\nGET /ping returns a string; the apps with the module also have a provider under @Fallback @Retry @CircuitBreaker @Timeout @Bulkhead.\n' +
      "The CPU columns count the app process's own CPU time (user + system), which other load on the machine changes far less than req/s.",
  );
}
