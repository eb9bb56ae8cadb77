import { Injectable } from '@nestjs/common';
import { Bulkhead, CircuitBreaker, Fallback, Timeout } from 'resilience4nest';
import { Dependencies } from '../downstream/dependencies';
import { fetchJson } from '../downstream/http-client';

@Injectable()
export class RecommendationsClient {
  constructor(private readonly dependencies: Dependencies) {}

  /** Products bought together with `sku`; `undefined` when the service cannot answer (the page goes without). */
  @Fallback(Error, 'withoutRecommendations')
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
