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

@Controller('probe')
export class LoadProbeController {
  constructor(private readonly quotes: QuoteService) {}

  @Get('bare')
  bare(): Promise<Quote> {
    return this.quotes.bare();
  }

  @Get('protected')
  protected(): Promise<Quote> {
    return this.quotes.protected();
  }
}
