import autocannon from 'autocannon';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { freePort, root } from './app';

/*
 * npm run load -- tax [seconds]: what importing ResilienceModule costs a
 * route that does no resilience work. The same trivial route is served by
 * an app without the module and by one that imports it (with a fully
 * decorated provider elsewhere), on Express and on Fastify, each in its own
 * process, driven closed-loop by autocannon in interleaved rounds.
 */

const CONNECTIONS = 10;
const ROUNDS = 3;
const PLATFORMS = ['express', 'fastify'] as const;
const VARIANTS = ['without', 'with'] as const;

interface Run {
  rps: number;
  p99: number;
}

async function serve(platform: string, variant: string): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const child = fork(join(root, 'load/tax-app.ts'), [platform, variant, String(port)], {
    cwd: root,
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    env: { ...process.env, TS_NODE_PROJECT: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the ${platform} app (${variant} the module) did not start in 60 s`)),
      60_000,
    );
    child.once('message', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`the ${platform} app (${variant} the module) exited with code ${code}`)),
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

/** Runs the comparison and prints its table. */
export async function tax(seconds: number): Promise<void> {
  console.log(
    `node ${process.version}; ${CONNECTIONS} connections, ${seconds} s per run, ${ROUNDS} interleaved rounds (medians)`,
  );
  const rows: string[] = [];
  for (const platform of PLATFORMS) {
    const apps = await Promise.all(VARIANTS.map((variant) => serve(platform, variant)));
    try {
      for (const app of apps) await drive(app.url, 1);
      const runs: Run[][] = [[], []];
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, app] of apps.entries()) {
          process.stderr.write(`${platform}, ${VARIANTS[i]} the module, round ${round + 1} of ${ROUNDS}\n`);
          runs[i].push(await drive(app.url, seconds));
        }
      }
      const [without, withModule] = runs.map((r) => ({
        rps: median(r.map((x) => x.rps)),
        p99: median(r.map((x) => x.p99)),
      }));
      const share = withModule.rps / without.rps;
      rows.push(
        `| ${platform} | ${Math.round(without.rps).toLocaleString('en-US')} | ${Math.round(withModule.rps).toLocaleString('en-US')} | ${(share * 100).toFixed(1)}% ${share >= 0.95 ? '(met)' : '(NOT met)'} | ${without.p99} | ${withModule.p99} | ${withModule.p99 <= without.p99 * 1.1 + 1 ? 'met' : 'NOT met'} |`,
      );
    } finally {
      for (const app of apps) app.stop();
    }
  }
  console.log(
    '\n| platform | req/s without the module | req/s with it | share (target ≥ 95%) | p99 ms without | p99 ms with | p99 within 10% (±1 ms) |',
  );
  console.log('|:--|--:|--:|--:|--:|--:|:--|');
  for (const row of rows) console.log(row);
  console.log(
    '\nGET /ping returns a string; the app with the module also has a provider under @Fallback @Retry @CircuitBreaker @Timeout @Bulkhead.',
  );
}
