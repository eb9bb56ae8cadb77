import { Injectable } from '@nestjs/common';
import { Bulkhead, CircuitBreaker, currentSignal, Fallback, Retry, Timeout } from 'resilience4nest';
import { Price, Supplier } from './supplier.js';

/** One decorated method per policy, each in front of the same supplier. */
@Injectable()
export class CatalogService {
  constructor(private readonly supplier: Supplier) {}

  @Retry('supplier')
  async retried(sku: string): Promise<Price> {
    return this.supplier.price(sku);
  }

  @Timeout('supplier')
  async timed(sku: string): Promise<Price> {
    return this.supplier.price(sku, currentSignal());
  }

  @CircuitBreaker('supplier')
  async guarded(sku: string): Promise<Price> {
    return this.supplier.price(sku);
  }

  @Bulkhead('supplier')
  async bounded(sku: string): Promise<Price> {
    return this.supplier.price(sku);
  }

  @Fallback(Error, 'priceUnknown')
  async withFallback(sku: string): Promise<Price> {
    return this.supplier.price(sku);
  }

  priceUnknown(sku: string): Price {
    return { sku, price: 'unknown' };
  }
}
