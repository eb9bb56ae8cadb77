import { BadRequestException, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { Cache, CacheConfigInput, CircuitBreaker, Fallback, ResilienceError, Retry, Timeout } from 'resilience4nest';
import { Dependencies } from '../downstream/dependencies';
import { DownstreamHttpError, fetchJson } from '../downstream/http-client';

/** A GBP exchange rate; `fresh: false` says it is the last known good value, `ageMs` old. */
export interface ExchangeRate {
  currency: string;
  rate: number;
  fresh: boolean;
  ageMs: number;
}

/**
 * The rates cache: no stored rate is quoted while the API answers (`ttl` 0);
 * when it cannot, the last rate it gave stands in, flagged not fresh, while
 * it is no older than `maxStaleness` (`shop.rates.max-staleness`).
 */
export function ratesCache(maxStaleness: string | number): CacheConfigInput {
  return {
    staleIfError: maxStaleness,
    key: (currency: string) => currency,
    mark: (rate: ExchangeRate, { ageMs }) => ({ ...rate, fresh: false, ageMs }),
  };
}

@Injectable()
export class ExchangeRatesClient {
  constructor(private readonly dependencies: Dependencies) {}

  @Fallback([ResilienceError, DownstreamHttpError, TypeError], 'rateUnavailable')
  @Cache('rates')
  @Retry('rates')
  @CircuitBreaker('rates')
  @Timeout('rates')
  async rate(currency: string): Promise<ExchangeRate> {
    try {
      const { rate } = await fetchJson<{ rate: number }>(
        'rates',
        `${this.dependencies.rates.url}/rates/${encodeURIComponent(currency)}`,
      );
      return { currency, rate, fresh: true, ageMs: 0 };
    } catch (error) {
      if (error instanceof DownstreamHttpError && error.status === 404)
        throw new BadRequestException(`unsupported currency ${currency}`);
      throw error;
    }
  }

  /**
   * The rates API could not answer and the cache had no rate young enough
   * to quote a price on (none yet, or past its shelf life): an explicit 503,
   * never a guessed rate.
   */
  rateUnavailable(currency: string): never {
    throw new ServiceUnavailableException(
      `no exchange rate for ${currency}: the rates API is unavailable and no rate young enough to quote on is known`,
    );
  }
}
