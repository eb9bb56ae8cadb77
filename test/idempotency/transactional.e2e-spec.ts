import { Body, Controller, HttpException, Injectable, Post } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, idempotencyTransaction, PostgresIdempotencyStore, RESILIENCE_PROBLEMS } from '../../lib';
import { TRANSACTION_NOT_COMMITTED } from '../../lib/features/idempotency/idempotency.messages';
import { PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';
import { Gate, json, RunningApp, ScriptedHandler, send, startApp } from './http-kit';

const START = Date.UTC(2025, 0, 1);
const LEASE = 30_000;

interface PaymentBody {
  readonly account: number;
  readonly pence: number;
  /** Throw this status after the insert. */
  readonly failWith?: number;
}

/** Table names of one test, so tests never see each other's rows. */
let ledger = '';

@Injectable()
class Payments extends ScriptedHandler {
  calls = 0;

  async charge(body: PaymentBody): Promise<{ id: number; pence: number }> {
    this.calls++;
    const { rows } = await idempotencyTransaction().query(
      `INSERT INTO ${ledger} (account, pence) VALUES ($1, $2) RETURNING id`,
      [body.account, body.pence],
    );
    await this.proceed();
    if (body.failWith !== undefined)
      throw new HttpException({ message: `failed with ${body.failWith}` }, body.failWith);
    return { id: rows[0].id as number, pence: body.pence };
  }
}

/** A message handler whose writes commit with its key. */
@Injectable()
class SettlementConsumer {
  runs = 0;

  @Idempotent({ key: (message: { id: string }) => message.id, transactional: true })
  async settle(message: { id: string; account: number; pence: number }): Promise<{ settled: number }> {
    this.runs++;
    const { rows } = await idempotencyTransaction().query(
      `INSERT INTO ${ledger} (account, pence) VALUES ($1, $2) RETURNING id`,
      [message.account, message.pence],
    );
    return { settled: rows[0].id as number };
  }
}

@Controller('payments')
class PaymentsController {
  constructor(private readonly payments: Payments) {}

  @Post()
  @Idempotent({ transactional: true })
  charge(@Body() body: PaymentBody) {
    return this.payments.charge(body);
  }
}

describe.each(PLATFORMS)('@Idempotent({ transactional: true }) on PostgreSQL (%s)', (platform) => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let table: string;
  let store: PostgresIdempotencyStore;
  let storeClock: VirtualClock;
  let running: RunningApp;
  let payments: Payments;

  const pay = (key: string, body: PaymentBody) => send(running.url, '/payments', { key, body });
  const rows = async () => (await pool.query(`SELECT account, pence FROM ${ledger} ORDER BY id`)).rows;

  beforeAll(() => {
    pool = new Pool({ connectionString: url, max: 10 });
  });
  afterAll(() => pool.end());
  beforeEach(async () => {
    const suffix = randomUUID().replace(/-/g, '');
    table = `idem_tx_${suffix}`;
    ledger = `ledger_${suffix}`;
    await pool.query(`CREATE TABLE accounts_${suffix} (id int PRIMARY KEY)`);
    await pool.query(`INSERT INTO accounts_${suffix} VALUES (1)`);
    // The foreign key is checked at COMMIT, so an insert naming a missing account succeeds and its transaction then fails.
    await pool.query(
      `CREATE TABLE ${ledger} (id serial PRIMARY KEY, account int NOT NULL REFERENCES accounts_${suffix} (id) DEFERRABLE INITIALLY DEFERRED, pence int NOT NULL)`,
    );
    storeClock = new VirtualClock(START);
    store = new PostgresIdempotencyStore({ pool, table, clock: storeClock });
    // The module clock stays still, so no lease is renewed: the store's clock alone decides when a lease has run out.
    running = await startApp(
      { clock: new VirtualClock(), idempotency: { store, lease: LEASE, principal: () => 'acct' } },
      { controllers: [PaymentsController], providers: [Payments, SettlementConsumer] },
      { platform },
    );
    payments = running.app.get(Payments);
  });
  afterEach(async () => {
    await running.close();
    const suffix = ledger.slice('ledger_'.length);
    await pool.query(
      `DROP TABLE IF EXISTS ${ledger}; DROP TABLE IF EXISTS accounts_${suffix}; DROP TABLE IF EXISTS ${table}`,
    );
  });

  const keyRecord = async (key: string) => store.get(JSON.stringify(['acct', 'POST', '/payments', key]));

  it('commits the business row and the completed key together, and replays without a new row', async () => {
    const first = await pay('k-commit', { account: 1, pence: 999 });
    expect(first.status).toBe(201);
    expect(await rows()).toEqual([{ account: 1, pence: 999 }]);
    expect(await keyRecord('k-commit')).toMatchObject({
      state: 'completed',
      response: { status: 201, body: first.text },
    });
    const again = await pay('k-commit', { account: 1, pence: 999 });
    expect(again).toMatchObject({ status: 201, text: first.text });
    expect(await rows()).toHaveLength(1);
  });

  it('leaves neither the row nor a completed key when the insert succeeds but the transaction rolls back at COMMIT', async () => {
    const answer = await pay('k-rollback', { account: 2, pence: 999 });
    expect(answer.status).toBe(500);
    expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(json(answer).detail).toBe(TRANSACTION_NOT_COMMITTED('PaymentsController.charge'));
    expect(payments.calls).toBe(1);
    expect(await rows()).toEqual([]);
    expect(await keyRecord('k-rollback')).toBeUndefined();
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['released']);
    expect((await pay('k-rollback', { account: 2, pence: 999 })).status).toBe(500);
    expect(payments.calls).toBe(2);
  });

  it('answers 500 problem+json, rolled back, when its connection is killed mid-request: the process does not crash', async () => {
    const gate = new Gate();
    payments.gates.push(gate);
    const answer = pay('k-killed', { account: 1, pence: 999 });
    await payments.watch.until(() => payments.calls === 1);
    // The handler holds its transaction open; an operator (or a failover) ends its backend.
    const { rows: sessions } = await pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE $1`,
      [`%INSERT INTO ${ledger}%`],
    );
    expect(sessions).toHaveLength(1);
    await pool.query('SELECT pg_terminate_backend($1)', [sessions[0].pid]);
    for (let i = 0; i < 5_000; i++) {
      const { rowCount } = await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [sessions[0].pid]);
      if (rowCount === 0) break;
    }
    gate.open();
    const killed = await answer;
    expect(killed.status).toBe(500);
    expect(killed.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(json(killed).detail).toBe(TRANSACTION_NOT_COMMITTED('PaymentsController.charge'));
    expect(await rows()).toEqual([]);
    expect(await keyRecord('k-killed')).toBeUndefined();
    // The key was freed with the rollback: the retry runs on a fresh connection and commits.
    expect((await pay('k-killed', { account: 1, pence: 999 })).status).toBe(201);
    expect(await rows()).toEqual([{ account: 1, pence: 999 }]);
  });

  it('rolls back and releases the key when the handler fails after its insert, so a retry runs', async () => {
    const failed = await pay('k-error', { account: 1, pence: 999, failWith: 503 });
    expect(failed.status).toBe(503);
    expect(await rows()).toEqual([]);
    expect(await keyRecord('k-error')).toBeUndefined();
    const retried = await pay('k-error', { account: 1, pence: 999, failWith: 503 });
    expect(retried.status).toBe(503);
    expect(payments.calls).toBe(2);
  });

  it('stores a 4xx the handler threw, with its writes rolled back', async () => {
    const refused = await pay('k-4xx', { account: 1, pence: 999, failWith: 402 });
    expect(refused.status).toBe(402);
    expect(await rows()).toEqual([]);
    const again = await pay('k-4xx', { account: 1, pence: 999, failWith: 402 });
    expect(again).toMatchObject({ status: 402, text: refused.text });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(payments.calls).toBe(1);
  });

  it('rolls back a run that lost its key to a takeover: one row, and the late run answers 409', async () => {
    const gate = new Gate();
    payments.gates.push(gate);
    const slow = pay('k-takeover', { account: 1, pence: 999 });
    await payments.watch.until(() => payments.calls === 1);
    await storeClock.advance(LEASE);
    // Stale in transactional mode means the first transaction has not committed, so the key runs again.
    const taken = await pay('k-takeover', { account: 1, pence: 999 });
    expect(taken.status).toBe(201);
    gate.open();
    const late = await slow;
    expect(late.status).toBe(409);
    expect(json(late).type).toBe(RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_IN_PROGRESS.type);
    expect(await rows()).toEqual([{ account: 1, pence: 999 }]);
    expect(await pay('k-takeover', { account: 1, pence: 999 })).toMatchObject({ status: 201, text: taken.text });
  });

  describe('on a message handler', () => {
    it('commits the writes with the key and returns the stored result to a redelivery', async () => {
      const consumer = running.app.get(SettlementConsumer);
      const first = await consumer.settle({ id: 'm-1', account: 1, pence: 500 });
      expect(await consumer.settle({ id: 'm-1', account: 1, pence: 500 })).toEqual(first);
      expect(consumer.runs).toBe(1);
      expect(await rows()).toEqual([{ account: 1, pence: 500 }]);
    });

    it('throws the COMMIT error, keeps no row and frees the key', async () => {
      const consumer = running.app.get(SettlementConsumer);
      await expect(consumer.settle({ id: 'm-2', account: 2, pence: 500 })).rejects.toThrow(/foreign key/);
      expect(await rows()).toEqual([]);
      await expect(consumer.settle({ id: 'm-2', account: 2, pence: 500 })).rejects.toThrow(/foreign key/);
      expect(consumer.runs).toBe(2);
      expect(running.outcomes.map((o) => o.outcome)).toEqual(['released', 'released']);
    });
  });
});
