import { Injectable } from '@nestjs/common';
import {
  Idempotent,
  MemoryIdempotencyStore,
  ResilienceRegistry,
  Retry,
  TimeoutExceededError,
  VirtualClock,
} from '../lib';
import { bootScenario, grouped, pythonRandom, ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * "One key per logical operation" (docs/scenarios.md, overcharge): 100
 * payments of 999p, each tried up to 4 times, and 40%
 * of replies lost after the charge was made. The provider's ledger is
 * `@Idempotent` (a `MemoryIdempotencyStore`), so a repeated key replays the
 * first charge instead of charging again. The client retries with the
 * module's `@Retry` (4 attempts); a lost reply surfaces as a
 * `TimeoutExceededError`, which it retries.
 *
 * Made once by the caller and passed in, the key is the payment's; made
 * inside the retried method, it is the attempt's, which is the same as no
 * key at all, though the code does use idempotency keys.
 */

/** The knobs of the run; the defaults are the reference model's. */
export interface OverchargeSettings {
  readonly payments: number;
  readonly pence: number;
  /** Attempts per payment, the first included. */
  readonly attempts: number;
  /** Share of replies lost after the charge was made. */
  readonly lossRate: number;
  /** Seed of the reply losses, drawn as Python's `random.random()` after `random.seed(seed)`: the reference model's 9 replays its draws. */
  readonly seed: number;
}

/** The reference run: 100 payments of 999p, 4 attempts, 40% of replies lost, `random.seed(9)`. */
export const OVERCHARGE_DEFAULTS: OverchargeSettings = {
  payments: 100,
  pence: 999,
  attempts: 4,
  lossRate: 0.4,
  seed: 9,
};

/** What the reference model prints. */
export const OVERCHARGE_REFERENCE = {
  keyPerAttempt: { total: 172_827, rows: 173 },
  keyPerPayment: { total: 99_900, rows: 100 },
} as const;

/** A charge instruction, the fingerprint of its key. */
interface Charge {
  readonly account: string;
  readonly pence: number;
}

/** The run's settings and its stream of reply losses (one stream across both variants, as the reference model's `random.seed(9)`). */
@Injectable()
class LossyLink {
  settings: OverchargeSettings = OVERCHARGE_DEFAULTS;
  random: () => number = pythonRandom(OVERCHARGE_DEFAULTS.seed);
  /** Attempts that reached the provider. */
  attempts = 0;
  repliesLost = 0;
}

/** The payment provider's ledger: each charge it runs is a row; a repeated key replays the first. */
@Injectable()
class Ledger {
  readonly rows: Charge[] = [];

  @Idempotent({ key: (_charge: Charge, key: string) => key })
  async charge(charge: Charge, _key: string): Promise<{ chargeId: number }> {
    this.rows.push(charge);
    return { chargeId: this.rows.length - 1 };
  }
}

/** The network between client and provider: the charge happens, then the reply may be lost. */
@Injectable()
class PaymentNetwork {
  constructor(
    private readonly ledger: Ledger,
    private readonly link: LossyLink,
  ) {}

  async charge(charge: Charge, key: string): Promise<{ chargeId: number }> {
    this.link.attempts++;
    const result = await this.ledger.charge(charge, key);
    if (this.link.random() < this.link.settings.lossRate) {
      this.link.repliesLost++;
      throw new TimeoutExceededError('payments', 2000); // reply lost: the charge may or may not have happened
    }
    return result;
  }
}

/** The client, retried by `@Retry('payments')`; the two methods differ only in where the key is made. */
@Injectable()
class PaymentClient {
  private minted = 0;

  constructor(private readonly network: PaymentNetwork) {}

  /** The key is made once by the caller, outside the retry loop: every attempt carries the payment's key. */
  @Retry('payments')
  async payWithKey(charge: Charge, key: string): Promise<{ chargeId: number }> {
    return this.network.charge(charge, key);
  }

  /** The key is made inside the retried method: a new key on every attempt. */
  @Retry('payments')
  async payWithNewKeyEachTry(charge: Charge): Promise<{ chargeId: number }> {
    return this.network.charge(charge, `attempt-${++this.minted}`);
  }
}

/** What one variant ended with. */
export interface OverchargeRow {
  readonly label: string;
  readonly reference: { readonly total: number; readonly rows: number };
  /** Pence in the ledger. */
  readonly total: number;
  /** Rows in the ledger. */
  readonly rows: number;
  /** Attempts that reached the provider. */
  readonly attempts: number;
  /** Attempts answered from the idempotency store rather than charged. */
  readonly replayed: number;
  /** Payments whose caller never heard back (every reply lost). */
  readonly unknownToCaller: number;
  /** Pence charged after each payment. */
  readonly cumulative: readonly number[];
}

/** Both variants. */
export interface OverchargeResult {
  readonly settings: OverchargeSettings;
  readonly rows: readonly OverchargeRow[];
}

/** Runs one variant on a fresh app, drawing reply losses from `random`. */
async function runVariant(
  perAttempt: boolean,
  settings: OverchargeSettings,
  random: () => number,
): Promise<OverchargeRow> {
  const { moduleRef, clock } = await bootScenario(
    [LossyLink, Ledger, PaymentNetwork, PaymentClient],
    (c: VirtualClock) => ({
      idempotency: { store: new MemoryIdempotencyStore({ clock: c }) },
      retry: { instances: { payments: { maxAttempts: settings.attempts, waitDuration: '200ms', jitter: 'none' } } },
    }),
  );
  try {
    const link = moduleRef.get(LossyLink);
    link.settings = settings;
    link.random = random;
    const ledger = moduleRef.get(Ledger);
    const client = moduleRef.get(PaymentClient);
    const cumulative: number[] = [];
    let unknownToCaller = 0;
    for (let payment = 0; payment < settings.payments; payment++) {
      const charge: Charge = { account: 'acct-1', pence: settings.pence };
      let settled = false;
      const call = perAttempt ? client.payWithNewKeyEachTry(charge) : client.payWithKey(charge, `payment-${payment}`);
      call.then(
        () => void (settled = true),
        () => void ((settled = true), unknownToCaller++),
      );
      for (let step = 0; step < 10 * settings.attempts && !settled; step++) await clock.advance(200);
      if (!settled) throw new Error(`overcharge: payment ${payment} did not settle`);
      cumulative.push(ledger.rows.reduce((n, r) => n + r.pence, 0));
    }
    const retry = moduleRef.get(ResilienceRegistry).retry('payments');
    if (retry.metrics.failedCallsWithRetry !== unknownToCaller)
      throw new Error('overcharge: retry metrics disagree with the caller');
    return {
      label: perAttempt ? 'new key on every retry' : 'one key per payment',
      reference: perAttempt ? OVERCHARGE_REFERENCE.keyPerAttempt : OVERCHARGE_REFERENCE.keyPerPayment,
      total: cumulative[cumulative.length - 1] ?? 0,
      rows: ledger.rows.length,
      attempts: link.attempts,
      replayed: link.attempts - ledger.rows.length,
      unknownToCaller,
      cumulative,
    };
  } finally {
    await moduleRef.close();
  }
}

/**
 * Runs both variants in the reference model's order on one stream of reply
 * losses, Python's generator seeded as the model seeds it, so the same
 * attempts lose their replies as in the reference run.
 */
export async function runOvercharge(settings: Partial<OverchargeSettings> = {}): Promise<OverchargeResult> {
  const s = { ...OVERCHARGE_DEFAULTS, ...settings };
  const random = pythonRandom(s.seed);
  const rows = [await runVariant(true, s, random), await runVariant(false, s, random)];
  return { settings: s, rows };
}

/** The printed table. */
export function overchargeTable(r: OverchargeResult): string {
  const s = r.settings;
  const correct = s.payments * s.pence;
  return [
    `overcharge: ${s.payments} payments of ${s.pence}p, up to ${s.attempts} attempts each by @Retry; ${Math.round(s.lossRate * 100)}% of replies lost after the charge;`,
    `the provider's ledger is @Idempotent (MemoryIdempotencyStore); reply losses drawn as the reference model's, from Python's random.seed(${s.seed}) (MT19937, replayed)`,
    table(
      ['', 'charged ref', 'ours', 'rows ref', 'ours', 'attempts', 'replayed', 'caller never heard', ''],
      r.rows.map((row) => [
        row.label,
        `${grouped(row.reference.total)}p`,
        `${grouped(row.total)}p`,
        String(row.reference.rows),
        String(row.rows),
        String(row.attempts),
        String(row.replayed),
        String(row.unknownToCaller),
        row.total > correct ? 'OVERCHARGED' : row.total === correct ? 'correct' : 'UNDERCHARGED',
      ]),
    ),
    `with one key per payment, the payments whose every reply was lost were still charged exactly once: their outcome is unknown to the caller, not doubled.`,
  ].join('\n');
}

/** Pence charged so far, payment by payment. */
export function overchargeChart(r: OverchargeResult): string {
  const s = r.settings;
  return lineChart({
    title: `overcharge: ${s.payments} payments of ${s.pence}p, ${Math.round(s.lossRate * 100)}% of replies lost`,
    xLabel: 'payments made',
    yLabel: 'charged so far (£)',
    series: [
      {
        label: `what was owed: £${((s.payments * s.pence) / 100).toFixed(2)}`,
        points: [
          [0, 0],
          [s.payments, (s.payments * s.pence) / 100],
        ] as const,
        color: '#555',
        dashed: true,
      },
      ...r.rows.map((row, i) => ({
        label: `${row.label}: £${(row.total / 100).toFixed(2)} in ${row.rows} rows`,
        points: row.cumulative.map((p, n) => [n + 1, p / 100] as const),
        color: i === 0 ? '#d62728' : '#1f77b4',
      })),
    ],
  });
}

/** The scenario as the CLI runs it. */
export async function overcharge(): Promise<ScenarioReport> {
  const result = await runOvercharge();
  return { table: overchargeTable(result), svg: overchargeChart(result) };
}
