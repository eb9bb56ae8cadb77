import { Injectable, NotFoundException } from '@nestjs/common';
import { Bulkhead, Fallback, ResilienceError, Retry, Timeout } from 'resilience4nest';
import { DownstreamHttpError, fetchJson } from '../downstream/http-client';
import { Dependencies } from '../downstream/dependencies';

/** A stock level; `available: 'unknown'` says so plainly instead of guessing a zero. */
export interface StockLevel {
  sku: string;
  available: number | 'unknown';
  source: 'inventory' | 'fallback';
}

@Injectable()
export class InventoryClient {
  constructor(private readonly dependencies: Dependencies) {}

  @Fallback([ResilienceError, DownstreamHttpError, TypeError], 'unknownStock')
  @Retry('inventory')
  @Timeout('inventory')
  @Bulkhead('inventory')
  async stockLevel(sku: string): Promise<StockLevel> {
    try {
      const { available } = await fetchJson<{ available: number }>('inventory', `${this.dependencies.inventory.url}/stock/${encodeURIComponent(sku)}`);
      return { sku, available, source: 'inventory' };
    } catch (error) {
      // "no such SKU" is the dependency's answer on the merits, not an outage: no retry, no fallback.
      if (error instanceof DownstreamHttpError && error.status === 404) throw new NotFoundException(`unknown sku ${sku}`);
      throw error;
    }
  }

  /** The inventory could not answer (timeout, overload, bulkhead full, connection failure). */
  unknownStock(sku: string): StockLevel {
    return { sku, available: 'unknown', source: 'fallback' };
  }
}
