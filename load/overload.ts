import autocannon from 'autocannon';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort, root, startApp } from './app';

/*
 * npm run load -- overload [seconds]: the sample app's GET /probe/stock
 * (a 10-connection pool of 20 ms queries: about 500 requests/s) offered
 * three times what it serves closed-loop without shedding, open-loop at a
 * fixed rate by clients that give up after 1 s: without load shedding, with
 * the sample's own (adaptive Gradient2 limit, priorities), with fixed caps
 * around the pool size, and with each adaptive algorithm on its defaults;
 * the adaptive rows are then compared with the best fixed cap of the same
 * run. Progress goes to stderr, the tables to stdout.
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

/**
 * Sends `rate` requests/s to `url` for `seconds`, each abandoned after the
 * client timeout, and waits for every one to end; tells stderr how far it
 * is every 2 s, prefixed with `label`.
 */
function openLoop(label: string, url: string, rate: number, seconds: number): Promise<OpenLoopResult> {
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
    let told = 0;
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      if (elapsed - told >= 2000) {
        told = elapsed;
        process.stderr.write(
          `  ${label}: ${Math.round(elapsed / 1000)} of ${seconds} s, ${result.sent} sent, ${result.served} served in time, ${result.refused} refused\n`,
        );
      }
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

/** One configuration's sample app, started once and driven in every round. */
interface Subject {
  readonly name: string;
  readonly url: string;
  readonly app: ChildProcess;
  readonly rounds: OpenLoopResult[];
}

/** Rounds of open-loop load; each round drives every app in turn, starting one place later than the last. */
const ROUNDS = 3;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Runs the overload comparison and prints its tables. Every configuration's
 * app is started first and kept running; the rounds then drive them in turn
 * at one rate (three times what the app without shedding serves
 * closed-loop), so a machine whose speed drifts, busy with other work,
 * shifts every configuration alike. Each figure is the median of the rounds.
 */
export async function overload(seconds: number): Promise<void> {
  const configs: Array<[string, NodeJS.ProcessEnv]> = [
    ['without load shedding', { RESILIENCE_CONFIG: configWithShedding(undefined) }],
    ...FIXED_CAPS.map((cap): [string, NodeJS.ProcessEnv] => [
      `fixed cap ${cap}`,
      { RESILIENCE_CONFIG: configWithShedding({ 'max-concurrent-requests': cap }) },
    ]),
    ['gradient2, defaults', { RESILIENCE_CONFIG: configWithShedding({ adaptive: { algorithm: 'gradient2' } }) }],
    ['vegas, defaults', { RESILIENCE_CONFIG: configWithShedding({ adaptive: { algorithm: 'vegas' } }) }],
    ['with load shedding (sample config)', {}],
  ];
  process.stderr.write(`overload: starting ${configs.length} sample apps, one per configuration\n`);
  const subjects: Subject[] = [];
  try {
    for (const [name, env] of configs) {
      const port = await freePort();
      process.stderr.write(`  ${name}: starting on port ${port}\n`);
      subjects.push({ name, url: `http://127.0.0.1:${port}/probe/stock`, app: await startApp(port, env), rounds: [] });
    }
    process.stderr.write('overload: warming every app up (2 s each)\n');
    for (const subject of subjects) await autocannon({ url: subject.url, connections: 20, duration: 2 });
    const closed = await autocannon({ url: subjects[0].url, connections: 20, duration: 3 });
    const capacity = closed['2xx'] / closed.duration;
    const offered = Math.round(capacity * OVERLOAD_FACTOR);
    process.stderr.write(
      `overload: ${Math.round(capacity)} served/s closed-loop without shedding; offering ${offered}/s to each app\n`,
    );
    console.log(
      `GET /probe/stock, offered ${offered} requests/s (${OVERLOAD_FACTOR}× the ${Math.round(capacity)}/s it serves closed-loop without shedding) ` +
        `for ${seconds} s per run, ${ROUNDS} rounds interleaved (medians); clients give up after ${CLIENT_TIMEOUT_MS} ms`,
    );
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < subjects.length; i++) {
        const subject = subjects[(i + round) % subjects.length];
        subject.rounds.push(
          await openLoop(`round ${round + 1}/${ROUNDS}, ${subject.name}`, subject.url, offered, seconds),
        );
      }
    }
    report(subjects, capacity, offered, seconds);
  } finally {
    for (const subject of subjects) subject.app.kill();
  }
}

function report(subjects: readonly Subject[], capacity: number, offered: number, seconds: number): void {
  const goodput = (s: Subject): number => median(s.rounds.map((r) => r.served / seconds));
  const tail = (s: Subject): number => median(s.rounds.map((r) => p99(r.servedLatencies)));
  console.log(
    '\n| run | served in time req/s | of capacity | 503 req/s | timed out | other errors | p99 of served ms |',
  );
  console.log('|:--|--:|--:|--:|--:|--:|--:|');
  for (const s of subjects) {
    console.log(
      `| ${s.name} | ${Math.round(goodput(s))} | ${((goodput(s) / capacity) * 100).toFixed(1)}% | ` +
        `${Math.round(median(s.rounds.map((r) => r.refused / seconds)))} | ${median(s.rounds.map((r) => r.timedOut))} | ` +
        `${median(s.rounds.map((r) => r.otherErrors))} | ${Math.round(tail(s))} |`,
    );
  }
  const fixed = subjects.filter((s) => s.name.startsWith('fixed cap'));
  // As in npm run scenario -- adaptive-defaults: the smallest cap within 1% of the best goodput of the caps tried.
  const top = Math.max(...fixed.map(goodput));
  const best = fixed.find((s) => goodput(s) >= 0.99 * top) as Subject;
  console.log(`\nAdaptive defaults against the best fixed cap of this run (${best.name}), offered ${offered}/s:\n`);
  console.log('| adaptive | served in time / best cap | p99 / best cap | goodput within 5% | p99 ≤ 1.3× |');
  console.log('|:--|--:|--:|:--|:--|');
  for (const s of subjects.filter((r) => r.name.endsWith('defaults'))) {
    const share = goodput(s) / goodput(best);
    const p99Ratio = tail(s) / tail(best);
    console.log(
      `| ${s.name} | ${(share * 100).toFixed(1)}% | ${p99Ratio.toFixed(2)}× | ${share >= 0.95 ? 'met' : 'NOT met'} | ${p99Ratio <= 1.3 ? 'met' : 'NOT met'} |`,
    );
  }
  console.log(
    `\nper round, served in time req/s: ${subjects.map((s) => `${s.name} ${s.rounds.map((r) => Math.round(r.served / seconds)).join('/')}`).join('; ')}`,
  );
}
