import { BadRequestException, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import {
  CircuitBreaker,
  Fallback,
  parseDuration,
  ResilienceError,
  ResilienceRegistry,
  Retry,
  Timeout,
} from 'resilience4nest';
import { Dependencies } from '../downstream/dependencies';
import { DownstreamHttpError, fetchJson } from '../downstream/http-client';

/** A GBP exchange rate; `fresh: false` says it is the last known good value, `ageMs` old. */
export interface ExchangeRate {
  currency: string;
  rate: number;
  fresh: boolean;
  ageMs: number;
}

@Injectable()
export class ExchangeRatesClient {
  private readonly lastKnownGood = new Map<string, { rate: number; at: number }>();
  private readonly maxStalenessMs: number;

  constructor(
    private readonly dependencies: Dependencies,
    private readonly registry: ResilienceRegistry,
    config: ConfigService,
  ) {
    const configured = config.get<string | number>('shop.rates.max-staleness') ?? '10m';
    const ms = parseDuration(configured);
    if (ms === undefined)
      throw new Error(`shop.rates.max-staleness must be a duration such as "10m", got ${JSON.stringify(configured)}`);
    this.maxStalenessMs = ms;
  }

  @Fallback([ResilienceError, DownstreamHttpError, TypeError], 'lastKnownGoodRate')
  @Retry('rates')
  @CircuitBreaker('rates')
  @Timeout('rates')
  async rate(currency: string): Promise<ExchangeRate> {
    try {
      const { rate } = await fetchJson<{ rate: number }>(
        'rates',
        `${this.dependencies.rates.url}/rates/${encodeURIComponent(currency)}`,
      );
      this.lastKnownGood.set(currency, { rate, at: this.registry.clock.now() });
      return { currency, rate, fresh: true, ageMs: 0 };
    } catch (error) {
      if (error instanceof DownstreamHttpError && error.status === 404)
        throw new BadRequestException(`unsupported currency ${currency}`);
      throw error;
    }
  }

  /**
   * The rates API could not answer: use the last rate it gave, flagged as not
   * fresh, but only while it is young enough to quote a price on.
   */
  lastKnownGoodRate(currency: string): ExchangeRate {
    const known = this.lastKnownGood.get(currency);
    if (known === undefined)
      throw new ServiceUnavailableException(
        `no exchange rate for ${currency}: the rates API is unavailable and no earlier rate is known`,
      );
    const ageMs = this.registry.clock.now() - known.at;
    if (ageMs > this.maxStalenessMs) {
      throw new ServiceUnavailableException(
        `no exchange rate for ${currency}: the rates API is unavailable and the last known rate is ${Math.round(ageMs / 1000)} s old, past the ${Math.round(this.maxStalenessMs / 1000)} s limit`,
      );
    }
    return { currency, rate: known.rate, fresh: false, ageMs };
  }
}
