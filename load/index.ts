import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

/*
 * npm run load [-- seconds]: starts the sample app in a child process on a
 * free loopback port, drives it with autocannon for a bounded time and prints
 * requests/s and p50/p99 for a bare route, the same route under the full
 * stack, and payments with the provider down and its breaker open.
 *
 * Throughput runs are closed-loop (as fast as the app answers). The latency
 * of the open breaker is also measured open-loop at a fixed rate below
 * capacity: at saturation every route's p99 is queueing in the event loop
 * (and the load generator shares the machine), which says nothing about
 * whether a refused call waits.
 */

const SECONDS = Number(process.argv[2] ?? 8);
const CONNECTIONS = 10;
const ROUNDS = 3;
const FIXED_RATE = 500;
const FIXED_RATE_CONNECTIONS = 4;
const root = join(__dirname, '..');

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startApp(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'sample-app/src/main.ts'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), TS_NODE_PROJECT: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the sample app exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/probe/bare`)).ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill();
  throw new Error('the sample app did not answer within 60 s');
}

async function drive(name: string, options: autocannon.Options): Promise<Row> {
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options });
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

function median(rows: Row[]): Row {
  const sorted = [...rows].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await startApp(port);
  try {
    console.log(`sample app on ${base}; ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} interleaved rounds (median by requests/s)`);
    await drive('warm-up', { url: `${base}/probe/protected`, duration: 2 });
    await drive('warm-up', { url: `${base}/probe/bare`, duration: 2 });
    const bare: Row[] = [];
    const full: Row[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await drive('bare route (GET /probe/bare)', { url: `${base}/probe/bare` }));
      full.push(await drive('full stack (GET /probe/protected)', { url: `${base}/probe/protected` }));
    }

    await fetch(`${base}/admin/dependencies/payments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"errorRate":1}' });
    let paymentId = 0;
    const pay = () => fetch(`${base}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `load-${++paymentId}` },
      body: JSON.stringify({ paymentId: `load-${paymentId}`, amount: 999 }),
    });
    for (let i = 0; i < 200 && (await pay()).status !== 503; i++);
    const payments = (rate?: number): autocannon.Options => ({
      url: `${base}/payments`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      ...(rate === undefined ? {} : { overallRate: rate, connections: FIXED_RATE_CONNECTIONS }),
      requests: [
        {
          setupRequest: (request) => {
            paymentId++;
            return {
              ...request,
              headers: { ...request.headers, 'idempotency-key': `load-${paymentId}` },
              body: JSON.stringify({ paymentId: `load-${paymentId}`, amount: 999 }),
            };
          },
        },
      ],
    });
    const open = await drive('payments, provider down, breaker open (POST /payments)', payments());
    const openAtRate = await drive(`the same at a fixed ${FIXED_RATE} requests/s (${FIXED_RATE_CONNECTIONS} connections)`, payments(FIXED_RATE));

    const bareAtRate = await drive(`bare route at the same fixed ${FIXED_RATE} requests/s`, {
      url: `${base}/probe/bare`,
      overallRate: FIXED_RATE,
      connections: FIXED_RATE_CONNECTIONS,
    });

    const rows = [median(bare), median(full), open, openAtRate, bareAtRate];
    console.log('\n| route | requests/s | p50 ms | p99 ms | non-2xx | errors |');
    console.log('|:--|--:|--:|--:|--:|--:|');
    for (const r of rows) console.log(`| ${r.name} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`);
    const share = rows[1].rps / rows[0].rps;
    console.log(`\nfull stack keeps ${(share * 100).toFixed(1)}% of the bare route's requests/s (target >= 90%): ${share >= 0.9 ? 'met' : 'NOT met'}`);
    console.log(
      `breaker open at ${FIXED_RATE} requests/s: p99 ${openAtRate.p99} ms (target < 10 ms): ${openAtRate.p99 < 10 ? 'met' : 'NOT met'}; ` +
        `the bare route measured the same way: p99 ${bareAtRate.p99} ms; at saturation: p99 ${open.p99} ms; every answer a 503 "rejected, not charged": ${open.non2xx > 0 && open.errors === 0 && openAtRate.non2xx > 0 && openAtRate.errors === 0 ? 'yes' : 'no'}`,
    );
    console.log(`all rounds, requests/s: bare ${bare.map((r) => Math.round(r.rps)).join(' / ')}; full stack ${full.map((r) => Math.round(r.rps)).join(' / ')}`);
  } finally {
    app.kill();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
