import { SimulatedDependency } from './simulated-dependency';

/** A charge the simulated payment provider made. */
export interface Charge {
  readonly chargeId: string;
  readonly amount: number;
}

/** Stock levels by SKU, as the simulated inventory service knows them. */
const STOCK: Record<string, number> = { 'sku-1': 12, 'sku-2': 0, 'sku-3': 4 };

/** GBP exchange rates the simulated rates API quotes. */
const RATES: Record<string, number> = { EUR: 1.17, USD: 1.27, JPY: 191.4 };

/** Products bought together, as the simulated recommendations service knows them. */
const ALSO_BOUGHT: Record<string, string[]> = { 'sku-1': ['sku-3'], 'sku-3': ['sku-1', 'sku-2'] };

/**
 * The simulated third parties the shop depends on, each a real HTTP server
 * on a free loopback port with its own admin endpoint.
 */
export class Dependencies {
  private constructor(
    readonly inventory: SimulatedDependency,
    readonly payments: SimulatedDependency,
    readonly rates: SimulatedDependency,
    readonly recommendations: SimulatedDependency,
    /** Every charge the payment provider made, by its idempotency key. */
    readonly charges: ReadonlyMap<string, Charge>,
  ) {}

  /** Starts all four. */
  static async start(): Promise<Dependencies> {
    const charges = new Map<string, Charge>();
    const [inventory, payments, rates, recommendations] = await Promise.all([
      SimulatedDependency.start('inventory', (req) => {
        const sku = lastSegment(req.url);
        return sku in STOCK
          ? { status: 200, body: { sku, available: STOCK[sku] } }
          : { status: 404, body: { error: `no sku ${sku}` } };
      }),
      Dependencies.paymentProvider(charges),
      SimulatedDependency.start('rates', (req) => {
        const currency = lastSegment(req.url).toUpperCase();
        return currency in RATES
          ? { status: 200, body: { base: 'GBP', currency, rate: RATES[currency] } }
          : { status: 404, body: { error: `no rate for ${currency}` } };
      }),
      SimulatedDependency.start('recommendations', (req) => ({
        status: 200,
        body: { skus: ALSO_BOUGHT[lastSegment(req.url)] ?? [] },
      })),
    ]);
    return new Dependencies(inventory, payments, rates, recommendations, charges);
  }

  /** By name, for the admin endpoint. */
  byName(name: string): SimulatedDependency | undefined {
    return this.all().find((d) => d.name === name);
  }

  /** All four. */
  all(): SimulatedDependency[] {
    return [this.inventory, this.payments, this.rates, this.recommendations];
  }

  /** Stops all four. */
  async close(): Promise<void> {
    await Promise.all(this.all().map((d) => d.close()));
  }

  /**
   * A payment provider that, like real ones, deduplicates charges on the
   * idempotency key, and answers `GET /charges/<key>` with the charge made
   * under that key (404 when none was).
   */
  private static paymentProvider(charges: Map<string, Charge>): Promise<SimulatedDependency> {
    return SimulatedDependency.start('payments', (req, body) => {
      if (req.method === 'GET') {
        const charge = charges.get(lastSegment(req.url));
        return charge === undefined
          ? { status: 404, body: { error: 'no charge under this key' } }
          : { status: 200, body: charge };
      }
      const key = String(req.headers['idempotency-key'] ?? '');
      const { amount } = (body ?? {}) as { amount?: number };
      if (!key || typeof amount !== 'number')
        return { status: 400, body: { error: 'idempotency-key and amount are required' } };
      const charge = charges.get(key) ?? { chargeId: `ch_${charges.size + 1}`, amount };
      charges.set(key, charge);
      return { status: 201, body: charge };
    });
  }
}

function lastSegment(url: string | undefined): string {
  return decodeURIComponent((url ?? '').split('?')[0].split('/').pop() ?? '');
}
