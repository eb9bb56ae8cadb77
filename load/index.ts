import autocannon from 'autocannon';
import { freePort, startApp } from './app';
import { overload } from './overload';
import { tax } from './tax';
import { keys } from './keys';

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

const USAGE = `usage: npm run load [-- <seconds per run>]   bare route, full stack and an open breaker (default 8 s)
       npm run load -- overload [<seconds>]   a pool-bound route offered 3× its capacity: without shedding, fixed caps, adaptive defaults, the sample's (default 10 s)
       npm run load -- tax [<seconds>]   a trivial route of an app without the module, with it, and with deadline: {}, Express and Fastify (default 5 s)
       npm run load -- keys [<distinct keys>]   distinct keys through a per-key breaker at full speed: heap per key and metrics size stay bounded by keys.max (default 10000)`;

const SECONDS = Number(process.argv[2] ?? 8);
const CONNECTIONS = 10;
const ROUNDS = 3;
const FIXED_RATE = 500;
const FIXED_RATE_CONNECTIONS = 4;

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
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

async function throughput(): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const app = await startApp(port);
  try {
    console.log(
      `sample app on ${base}; ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} interleaved rounds (median by requests/s)`,
    );
    await drive('warm-up', { url: `${base}/probe/protected`, duration: 2 });
    await drive('warm-up', { url: `${base}/probe/bare`, duration: 2 });
    const bare: Row[] = [];
    const full: Row[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await drive('bare route (GET /probe/bare)', { url: `${base}/probe/bare` }));
      full.push(await drive('full stack (GET /probe/protected)', { url: `${base}/probe/protected` }));
    }

    await fetch(`${base}/admin/dependencies/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"errorRate":1}',
    });
    let paymentId = 0;
    const pay = () =>
      fetch(`${base}/payments`, {
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
    const openAtRate = await drive(
      `the same at a fixed ${FIXED_RATE} requests/s (${FIXED_RATE_CONNECTIONS} connections)`,
      payments(FIXED_RATE),
    );

    const bareAtRate = await drive(`bare route at the same fixed ${FIXED_RATE} requests/s`, {
      url: `${base}/probe/bare`,
      overallRate: FIXED_RATE,
      connections: FIXED_RATE_CONNECTIONS,
    });

    const rows = [median(bare), median(full), open, openAtRate, bareAtRate];
    console.log('\n| route | requests/s | p50 ms | p99 ms | non-2xx | errors |');
    console.log('|:--|--:|--:|--:|--:|--:|');
    for (const r of rows)
      console.log(
        `| ${r.name} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`,
      );
    const share = rows[1].rps / rows[0].rps;
    console.log(
      `\nfull stack keeps ${(share * 100).toFixed(1)}% of the bare route's requests/s (target >= 90%): ${share >= 0.9 ? 'met' : 'NOT met'}`,
    );
    console.log(
      `breaker open at ${FIXED_RATE} requests/s: p99 ${openAtRate.p99} ms (target < 10 ms): ${openAtRate.p99 < 10 ? 'met' : 'NOT met'}; ` +
        `the bare route measured the same way: p99 ${bareAtRate.p99} ms; at saturation: p99 ${open.p99} ms; every answer a 503 "rejected, not charged": ${open.non2xx > 0 && open.errors === 0 && openAtRate.non2xx > 0 && openAtRate.errors === 0 ? 'yes' : 'no'}`,
    );
    console.log(
      `all rounds, requests/s: bare ${bare.map((r) => Math.round(r.rps)).join(' / ')}; full stack ${full.map((r) => Math.round(r.rps)).join(' / ')}`,
    );
  } finally {
    app.kill();
  }
}

function main(args: readonly string[]): Promise<void> {
  const [first, second] = args;
  if (first === 'overload') return overload(second === undefined ? 10 : positiveSeconds(second));
  if (first === 'tax') return tax(second === undefined ? 5 : positiveSeconds(second));
  if (first === 'keys') return keys(second === undefined ? 10_000 : Math.round(positiveSeconds(second)));
  if (first !== undefined && (first.startsWith('-') || !(Number(first) > 0))) {
    console.log(USAGE);
    if (first !== '--help' && first !== '-h') process.exitCode = 2;
    return Promise.resolve();
  }
  return throughput();
}

function positiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!(seconds > 0)) throw new Error(`seconds must be a positive number, got ${JSON.stringify(value)}\n${USAGE}`);
  return seconds;
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
