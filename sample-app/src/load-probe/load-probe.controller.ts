import { Controller, Get, Injectable } from '@nestjs/common';
import { Bulkhead, CircuitBreaker, Fallback, ResilienceError, Retry, Timeout } from 'resilience4nest';

/** What both probe routes answer. */
export interface Quote {
  sku: string;
  pence: number;
  source: 'catalogue' | 'fallback';
}

/**
 * The same in-process work with and without the full stack, so `npm run load`
 * measures what the module adds to a route and nothing else.
 */
@Injectable()
export class QuoteService {
  async bare(): Promise<Quote> {
    return { sku: 'sku-1', pence: 1999, source: 'catalogue' };
  }

  @Fallback(ResilienceError, 'catalogueUnavailable')
  @Retry('probe')
  @CircuitBreaker('probe')
  @Timeout('probe')
  @Bulkhead('probe')
  async protected(): Promise<Quote> {
    return { sku: 'sku-1', pence: 1999, source: 'catalogue' };
  }

  catalogueUnavailable(): Quote {
    return { sku: 'sku-1', pence: 1999, source: 'fallback' };
  }
}

/** A database pool of 10 connections whose queries take 20 ms: 500 queries/s at most (Little's law), the rest wait in line. */
@Injectable()
export class StockPool {
  static readonly CONNECTIONS = 10;
  static readonly QUERY_MS = 20;
  private free = StockPool.CONNECTIONS;
  private readonly waiting: Array<() => void> = [];

  async query(): Promise<number> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      await new Promise((resolve) => setTimeout(resolve, StockPool.QUERY_MS));
      return 42;
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.free++;
      else next();
    }
  }
}

@Controller('probe')
export class LoadProbeController {
  constructor(
    private readonly quotes: QuoteService,
    private readonly pool: StockPool,
  ) {}

  @Get('bare')
  bare(): Promise<Quote> {
    return this.quotes.bare();
  }

  @Get('protected')
  protected(): Promise<Quote> {
    return this.quotes.protected();
  }

  /** A product-page read behind the pool: `npm run load -- overload` offers it 3× what the pool can serve. */
  @Get('stock')
  async stock(): Promise<{ available: number }> {
    return { available: await this.pool.query() };
  }
}
