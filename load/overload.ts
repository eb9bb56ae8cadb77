import autocannon from 'autocannon';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort, root, startApp } from './app';

/*
 * npm run load -- overload [seconds]: the sample app's GET /probe/stock
 * (a 10-connection pool of 20 ms queries: about 500 requests/s) offered
 * three times what it served closed-loop, open-loop at a fixed rate by
 * clients that give up after 1 s: without load shedding, with the sample's
 * own (adaptive Gradient2 limit, priorities), with fixed caps around the
 * pool size, and with each adaptive algorithm on its defaults; the adaptive
 * rows are then compared with the best fixed cap of the same run.
 */

const CLIENT_TIMEOUT_MS = 1000;
const TICK_MS = 10;
const OVERLOAD_FACTOR = 3;

interface OpenLoopResult {
  sent: number;
  served: number;
  refused: number;
  timedOut: number;
  otherErrors: number;
  servedLatencies: number[];
}

/** Sends `rate` requests/s to `url` for `seconds`, each abandoned after the client timeout, and waits for every one to end. */
function openLoop(url: string, rate: number, seconds: number): Promise<OpenLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const result: OpenLoopResult = { sent: 0, served: 0, refused: 0, timedOut: 0, otherErrors: 0, servedLatencies: [] };
  let pending = 0;
  return new Promise((resolve) => {
    const started = performance.now();
    let owed = 0;
    const finish = (): void => {
      if (--pending === 0 && performance.now() - started >= seconds * 1000) {
        agent.destroy();
        resolve(result);
      }
    };
    const send = (): void => {
      pending++;
      result.sent++;
      const t0 = performance.now();
      const req = request(url, { agent, timeout: CLIENT_TIMEOUT_MS }, (res) => {
        res.resume();
        res.on('end', () => {
          const latency = performance.now() - t0;
          if (res.statusCode === 200 && latency <= CLIENT_TIMEOUT_MS) {
            result.served++;
            result.servedLatencies.push(latency);
          } else if (res.statusCode === 503) result.refused++;
          else result.otherErrors++;
          finish();
        });
      });
      req.on('timeout', () => req.destroy(new Error('client timeout')));
      req.on('error', (error) => {
        if (error.message === 'client timeout') result.timedOut++;
        else result.otherErrors++;
        finish();
      });
      req.end();
    };
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      if (elapsed >= seconds * 1000) {
        clearInterval(timer);
        if (pending === 0) resolve(result);
        return;
      }
      owed += (rate * TICK_MS) / 1000;
      for (; owed >= 1; owed--) send();
    }, TICK_MS);
  });
}

function p99(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
}

/** Fixed caps compared, around the route's pool of 10 connections. */
const FIXED_CAPS = [10, 12, 15, 20];

/**
 * The sample's config with its `load-shedding` section replaced by `shedding`
 * (taken out when undefined), as a file `RESILIENCE_CONFIG` can name.
 */
function configWithShedding(shedding: Record<string, unknown> | undefined): string {
  const config = parse(readFileSync(join(root, 'sample-app/src/config/resilience.yaml'), 'utf8')) as {
    resilience4j: Record<string, unknown>;
  };
  if (shedding === undefined) delete config.resilience4j['load-shedding'];
  else config.resilience4j['load-shedding'] = shedding;
  const file = join(mkdtempSync(join(tmpdir(), 'resilience4nest-load-')), 'resilience.yaml');
  writeFileSync(file, stringify(config));
  return file;
}

interface Row {
  name: string;
  capacity: number;
  offered: number;
  result: OpenLoopResult;
  seconds: number;
}

async function run(name: string, env: NodeJS.ProcessEnv, seconds: number): Promise<Row> {
  process.stderr.write(`overload: ${name}…\n`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/probe/stock`;
  const app = await startApp(port, env);
  try {
    await autocannon({ url, connections: 20, duration: 2 });
    const closed = await autocannon({ url, connections: 20, duration: 3 });
    const capacity = closed.requests.average;
    const offered = Math.round(capacity * OVERLOAD_FACTOR);
    return { name, capacity, offered, result: await openLoop(url, offered, seconds), seconds };
  } finally {
    app.kill();
  }
}

/** Runs the overload comparison and prints its tables. */
export async function overload(seconds: number): Promise<void> {
  console.log(
    `GET /probe/stock, offered ${OVERLOAD_FACTOR}× its closed-loop capacity for ${seconds} s; clients give up after ${CLIENT_TIMEOUT_MS} ms`,
  );
  const configs: Array<[string, Record<string, unknown> | undefined]> = [
    ['without load shedding', undefined],
    ...FIXED_CAPS.map((cap): [string, Record<string, unknown>] => [
      `fixed cap ${cap}`,
      { 'max-concurrent-requests': cap },
    ]),
    ['gradient2, defaults', { adaptive: { algorithm: 'gradient2' } }],
    ['vegas, defaults', { adaptive: { algorithm: 'vegas' } }],
  ];
  const rows: Row[] = [];
  for (const [name, shedding] of configs) {
    rows.push(await run(name, { RESILIENCE_CONFIG: configWithShedding(shedding) }, seconds));
  }
  rows.push(await run('with load shedding (sample config)', {}, seconds));
  const goodput = (row: Row): number => row.result.served / row.seconds;
  console.log(
    '\n| run | capacity req/s | offered req/s | served in time req/s | 503 req/s | timed out | other errors | p99 of served ms |',
  );
  console.log('|:--|--:|--:|--:|--:|--:|--:|--:|');
  for (const row of rows) {
    const { name, capacity, offered, result, seconds: s } = row;
    console.log(
      `| ${name} | ${Math.round(capacity)} | ${offered} | ${Math.round(goodput(row))} | ${Math.round(result.refused / s)} | ${result.timedOut} | ${result.otherErrors} | ${Math.round(p99(result.servedLatencies))} |`,
    );
  }
  const without = rows[0];
  const sample = rows[rows.length - 1];
  console.log(
    `\nserved in time: ${((goodput(sample) / sample.capacity) * 100).toFixed(1)}% of capacity with the sample's shedding, ` +
      `${((goodput(without) / without.capacity) * 100).toFixed(1)}% without`,
  );
  const fixed = rows.filter((row) => row.name.startsWith('fixed cap'));
  // As in npm run scenario -- adaptive-defaults: the smallest cap within 1% of the best goodput of the caps tried.
  const top = Math.max(...fixed.map(goodput));
  const best = fixed.find((row) => goodput(row) >= 0.99 * top) as Row;
  const bestP99 = p99(best.result.servedLatencies);
  console.log(`\nAdaptive defaults against the best fixed cap of this run (${best.name}):\n`);
  console.log('| adaptive | served in time / best cap | p99 / best cap | goodput within 5% | p99 ≤ 1.3× |');
  console.log('|:--|--:|--:|:--|:--|');
  for (const row of rows.filter((r) => r.name.endsWith('defaults'))) {
    const share = goodput(row) / goodput(best);
    const p99Ratio = p99(row.result.servedLatencies) / bestP99;
    console.log(
      `| ${row.name} | ${(share * 100).toFixed(1)}% | ${p99Ratio.toFixed(2)}× | ${share >= 0.95 ? 'met' : 'NOT met'} | ${p99Ratio <= 1.3 ? 'met' : 'NOT met'} |`,
    );
  }
}
