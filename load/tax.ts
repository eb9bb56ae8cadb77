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
const ROUNDS = 3;
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
}

async function serve(platform: string, variant: (typeof VARIANTS)[number]): Promise<{ url: string; stop: () => void }> {
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
  return { url: `http://127.0.0.1:${port}/ping`, stop: () => child.kill() };
}

async function drive(url: string, seconds: number): Promise<Run> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

/** Runs the comparison and prints its table. */
export async function tax(seconds: number): Promise<void> {
  console.log(
    `node ${process.version}; ${CONNECTIONS} connections, ${seconds} s per run, ${ROUNDS} interleaved rounds (medians); load average before: ${load()}`,
  );
  const rows: string[] = [];
  for (const platform of PLATFORMS) {
    const apps = await Promise.all(VARIANTS.map((variant) => serve(platform, variant)));
    try {
      for (const app of apps) await drive(app.url, 1);
      const runs: Run[][] = VARIANTS.map(() => []);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, app] of apps.entries()) {
          process.stderr.write(`${platform}, ${LABELS[VARIANTS[i]]}, round ${round + 1} of ${ROUNDS}\n`);
          runs[i].push(await drive(app.url, seconds));
        }
      }
      const [without, ...others] = runs.map((r) => ({
        rps: median(r.map((x) => x.rps)),
        p99: median(r.map((x) => x.p99)),
      }));
      rows.push(
        `| ${platform} | ${LABELS.without} | ${Math.round(without.rps).toLocaleString('en-US')} | 100% | ${without.p99} | |`,
      );
      for (const [i, other] of others.entries()) {
        const share = other.rps / without.rps;
        rows.push(
          `| ${platform} | ${LABELS[VARIANTS[i + 1]]} | ${Math.round(other.rps).toLocaleString('en-US')} | ${(share * 100).toFixed(1)}% ${share >= 0.95 ? '(met)' : '(NOT met)'} | ${other.p99} | ${other.p99 <= without.p99 * 1.1 + 1 ? 'met' : 'NOT met'} |`,
        );
      }
    } finally {
      for (const app of apps) app.stop();
    }
  }
  console.log(
    `\nload average after: ${load()}\n\n| platform | app | req/s | share of req/s kept (target ≥ 95%) | p99 ms | p99 within 10% (±1 ms) |`,
  );
  console.log('|:--|:--|--:|--:|--:|:--|');
  for (const row of rows) console.log(row);
  console.log(
    '\nGET /ping returns a string; the apps with the module also have a provider under @Fallback @Retry @CircuitBreaker @Timeout @Bulkhead.',
  );
}
