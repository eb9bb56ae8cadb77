import { Body, Controller, Post } from '@nestjs/common';
import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Pool } from 'pg';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, IdempotencyReconciler, PostgresIdempotencyStore, StaleIdempotencyKey } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { json, RunningApp, send, startApp } from './http-kit';

// Runs for many seconds on an idle machine: headroom for a busy one.
jest.setTimeout(120_000);

const LEASE = 30_000;
const FIXTURE = join(__dirname, 'fixtures', 'crashing-payment-service.ts');

let ledger = '';

/** The surviving instance of the same service: same route, same store table. */
@Controller('payments')
class PaymentsController {
  runs = 0;

  @Post()
  @Idempotent()
  async pay(@Body() body: { pence: number }) {
    this.runs++;
    return { pence: body.pence };
  }
}

/** Resolves with the first IPC message of `type` from `child`, or rejects if it fails or exits first. */
function message<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string; error?: string }) => {
      if (m.type === type) {
        cleanup();
        resolve(m as T);
      } else if (m.type === 'failed') {
        cleanup();
        reject(new Error(`payment service failed: ${m.error}`));
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`payment service exited (code ${code}, signal ${signal}) before '${type}'`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

describe('crash between the effect and the completion, on PostgreSQL', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let child: ChildProcess | undefined;
  let running: RunningApp | undefined;
  const table = `idem_crash_${randomUUID().replace(/-/g, '')}`;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 5 });
    ledger = `ledger_${randomUUID().replace(/-/g, '')}`;
    await pool.query(`CREATE TABLE ${ledger} (id serial PRIMARY KEY, reference text NOT NULL, pence int NOT NULL)`);
  });
  afterAll(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await running?.close();
    await pool.query(`DROP TABLE IF EXISTS ${ledger}; DROP TABLE IF EXISTS ${table}`);
    await pool.end();
  });

  it('answers 409 within the lease, then lets the reconciler resolve the key: the charge happened exactly once', async () => {
    child = fork(FIXTURE, [], {
      execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
      env: { ...process.env, CRASH_DATABASE_URL: url, CRASH_IDEMPOTENCY_TABLE: table, CRASH_LEDGER_TABLE: ledger },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    const { port } = await message<{ port: number }>(child, 'listening');
    const charged = message(child, 'charged');
    const lostReply = fetch(`http://127.0.0.1:${port}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'order-42' },
      body: JSON.stringify({ pence: 999 }),
    }).then(
      () => 'answered',
      () => 'lost',
    );
    await charged;
    const exited = new Promise((resolve) => child?.once('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(await lostReply).toBe('lost');
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${ledger}`)).rows[0].n).toBe(1);

    const clock = new VirtualClock(Date.now());
    const stale: StaleIdempotencyKey[] = [];
    const reconciler: IdempotencyReconciler = async (key) => {
      stale.push(key);
      const found = await pool.query(`SELECT id, pence FROM ${ledger} WHERE reference = $1`, [key.downstreamKey()]);
      if (found.rows.length === 0) return { action: 'run' };
      return { action: 'complete', status: 201, body: { chargeId: found.rows[0].id, pence: found.rows[0].pence } };
    };
    running = await startApp(
      {
        clock,
        idempotency: {
          store: new PostgresIdempotencyStore({ pool, table, clock }),
          principal: () => 'merchant-1',
          reconciler,
        },
      },
      { controllers: [PaymentsController] },
    );
    const retry = () => send((running as RunningApp).url, '/payments', { key: 'order-42', body: { pence: 999 } });

    const withinLease = await retry();
    expect(withinLease.status).toBe(409);
    expect(Number(withinLease.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(stale).toHaveLength(0);

    await clock.advance(LEASE);
    const resolved = await retry();
    expect(resolved.status).toBe(201);
    expect(json(resolved)).toEqual({ chargeId: 1, pence: 999 });
    expect(resolved.headers.get('idempotent-replayed')).toBe('true');
    expect(stale).toHaveLength(1);
    expect(stale[0]).toMatchObject({ key: 'order-42', transport: 'http', record: { state: 'in_progress' } });

    const again = await retry();
    expect(again).toMatchObject({ status: 201, text: resolved.text });
    expect(running.app.get(PaymentsController).runs).toBe(0);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${ledger}`)).rows[0].n).toBe(1);
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['in_progress', 'reconciled', 'replayed']);
  });
});
