import { Injectable } from '@nestjs/common';

/** What the supplier does on its next call. */
export type SupplierStep = 'answer' | 'unavailable' | 'broken' | 'hang' | 'hold';

export interface Price {
  sku: string;
  price: number | 'unknown';
}

/** The dependency behind the shop: each call plays the next planned step (answering when none is left). */
@Injectable()
export class Supplier {
  calls = 0;
  private readonly plan: SupplierStep[] = [];
  private readonly held: Array<() => void> = [];

  next(...steps: SupplierStep[]): void {
    this.plan.push(...steps);
  }

  /** Calls waiting on a `hold` step. */
  get holding(): number {
    return this.held.length;
  }

  /** Lets every held call answer. */
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  async price(sku: string, signal?: AbortSignal): Promise<Price> {
    this.calls++;
    const step = this.plan.shift() ?? 'answer';
    if (step === 'unavailable') throw Object.assign(new Error('supplier unavailable'), { status: 503 });
    if (step === 'broken') throw new Error('supplier broken');
    if (step === 'hang') {
      await new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    }
    if (step === 'hold') await new Promise<void>((answer) => this.held.push(answer));
    return { sku, price: 42 };
  }
}
