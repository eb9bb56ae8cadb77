import { Injectable } from '@nestjs/common';
import { Bulkhead, Cache, CircuitBreaker, Fallback, Timeout } from 'resilience4nest';
import { Dependencies } from '../downstream/dependencies';
import { fetchJson } from '../downstream/http-client';

@Injectable()
export class RecommendationsClient {
  constructor(private readonly dependencies: Dependencies) {}

  /**
   * Products bought together with `sku`; `undefined` when the service cannot
   * answer (the page goes without). Concurrent page views of one product
   * share one call (cache `recommendations`: `coalesce: true`).
   */
  @Fallback(Error, 'withoutRecommendations')
  @Cache('recommendations')
  @CircuitBreaker('recommendations')
  @Timeout('recommendations')
  @Bulkhead('recommendations')
  async alsoBought(sku: string): Promise<string[] | undefined> {
    const { skus } = await fetchJson<{ skus: string[] }>(
      'recommendations',
      `${this.dependencies.recommendations.url}/also-bought/${encodeURIComponent(sku)}`,
    );
    return skus;
  }

  /** Recommendations are optional: drop them rather than fail the page or invent some. */
  withoutRecommendations(): undefined {
    return undefined;
  }
}
