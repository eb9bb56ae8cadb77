import { Body, Controller, Injectable, Post } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { Pool } from 'pg';
import { Idempotent, idempotencyTransaction, PostgresIdempotencyStore } from '../../lib';
import { mulberry32 } from '../../scenarios/kit';
import { PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';
import { RunningApp, startApp } from './http-kit';
import { report } from '../support/report';

// Runs for many seconds on an idle machine: headroom for a busy one.
jest.setTimeout(120_000);

/**
 * The payment simulation of `npm run scenario -- overcharge` (docs/decisions/0003),
 * end to end over HTTP on PostgreSQL: 100 payments of 999 pence, each tried up
 * to 4 times, 40% of replies lost after the charge was made. The ledger
 * insert and the key's completion share one transaction, so a
 * charge and its key commit or roll back together.
 */
const PAYMENTS = 100;
const PENCE = 999;
const ATTEMPTS = 4;
const LOSS = 0.4;
const SEED = 9;

let ledger = '';

@Injectable()
class Charges {
  async charge(account: string, pence: number): Promise<{ chargeId: number }> {
    const { rows } = await idempotencyTransaction().query(
      `INSERT INTO ${ledger} (account, pence) VALUES ($1, $2) RETURNING id`,
      [account, pence],
    );
    return { chargeId: rows[0].id as number };
  }
}

@Controller('charges')
class ChargesController {
  constructor(private readonly charges: Charges) {}

  @Post()
  @Idempotent({ transactional: true })
  charge(@Body() body: { account: string; pence: number }) {
    return this.charges.charge(body.account, body.pence);
  }
}

/** One POST on a fresh connection; resolves with the status, or rejects when the reply is lost. */
function post(base: string, key: string, body: object): Promise<number> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request(
      `${base}/charges`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'idempotency-key': key,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode as number));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A stable key per logical payment, as the overcharge reference model makes it (docs/scenarios.md). */
function paymentKey(payment: number): string {
  return createHash('sha256').update(`payment-${payment}`).digest('hex').slice(0, 32);
}

describe.each(PLATFORMS)('payment simulation over HTTP on PostgreSQL (%s)', (platform) => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let running: RunningApp;
  let lose: () => boolean;
  const lost = { count: 0 };

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 10 });
    const suffix = randomUUID().replace(/-/g, '');
    ledger = `ledger_${suffix}`;
    await pool.query(`CREATE TABLE ${ledger} (id serial PRIMARY KEY, account text NOT NULL, pence int NOT NULL)`);
    const store = new PostgresIdempotencyStore({ pool, table: `idem_sim_${suffix}` });
    running = await startApp(
      { idempotency: { store, principal: () => 'merchant-1' } },
      { controllers: [ChargesController], providers: [Charges] },
      {
        platform,
        prepare: (app) =>
          // The network: after the server has done everything (the charge, the stored answer), 40% of replies never arrive.
          // Middleware gets Node's own response on both platforms.
          app.use(
            (
              _req: unknown,
              res: { end: (...args: unknown[]) => unknown; socket: { destroy(): void } | null },
              next: () => void,
            ) => {
              const end = res.end;
              res.end = function (this: unknown, ...args: unknown[]) {
                if (!lose()) return end.apply(this, args);
                lost.count++;
                res.socket?.destroy();
                return this;
              };
              next();
            },
          ),
      },
    );
  });
  afterAll(async () => {
    await running.close();
    await pool.query(`DROP TABLE IF EXISTS ${ledger}; DROP TABLE IF EXISTS idem_sim_${ledger.slice('ledger_'.length)}`);
    await pool.end();
  });

  /** Pays 100 × 999p, each payment tried until a reply arrives (at most 4 times); returns what the ledger holds for `account`. */
  async function simulate(
    account: string,
    freshKeyEachTry: boolean,
  ): Promise<{ pence: number; rows: number; attempts: number; lost: number }> {
    const random = mulberry32(SEED);
    lose = () => random() < LOSS;
    lost.count = 0;
    let attempts = 0;
    for (let payment = 0; payment < PAYMENTS; payment++) {
      let key = `${account}-${paymentKey(payment)}`;
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (freshKeyEachTry) key = randomUUID();
        attempts++;
        try {
          expect(await post(running.url, key, { account, pence: PENCE })).toBe(201);
          break;
        } catch (error) {
          // The reply was lost: the charge may or may not have happened, so try again.
          expect((error as NodeJS.ErrnoException).code).toBe('ECONNRESET');
        }
      }
    }
    const { rows } = await pool.query(
      `SELECT coalesce(sum(pence), 0)::int AS pence, count(*)::int AS rows FROM ${ledger} WHERE account = $1`,
      [account],
    );
    return { pence: rows[0].pence, rows: rows[0].rows, attempts, lost: lost.count };
  }

  const describeRun = (label: string, r: { pence: number; rows: number; attempts: number; lost: number }) =>
    `${label.padEnd(24)} ${PAYMENTS} payments of ${PENCE}p -> charged ${r.pence.toLocaleString('en-GB').padStart(7)}p in ${String(r.rows).padStart(3)} rows ` +
    `(${r.attempts} attempts, ${r.lost} replies lost) ${r.pence > PAYMENTS * PENCE ? 'OVERCHARGED' : 'correct'}`;

  it('charges exactly 99,900p in 100 rows with one key per payment, and overcharges with a new key per attempt', async () => {
    const fresh = await simulate('acct-fresh-keys', true);
    const stable = await simulate('acct-one-key', false);
    report(
      `payment simulation (seed ${SEED}, ${LOSS * 100}% of replies lost after the effect)\n  ${describeRun('new key on every retry', fresh)}\n  ${describeRun('one key per payment', stable)}`,
    );

    expect(stable).toMatchObject({ pence: 99_900, rows: 100 });
    // Seed 9 of mulberry32 loses 51 of 150 replies (one payment gives up after its fourth).
    expect(fresh).toEqual({ pence: 149_850, rows: 150, attempts: 150, lost: 51 });
    // The same seed loses the same replies in both runs, so both make the same attempts.
    expect(stable.attempts).toBe(fresh.attempts);
    expect(fresh.rows).toBe(fresh.attempts);
    expect(fresh.pence).toBe(fresh.rows * PENCE);
    expect(fresh.pence).toBeGreaterThan(99_900);
    const replays = running.outcomes.filter((o) => o.outcome === 'replayed').length;
    expect(replays).toBe(stable.attempts - PAYMENTS);
  });
});
