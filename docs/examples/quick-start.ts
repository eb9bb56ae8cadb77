import { Controller, Get, INestApplication, Injectable, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  CallNotPermittedError,
  CircuitBreaker,
  deadlineHeaders,
  currentSignal,
  Fallback,
  ResilienceExceptionFilter,
  ResilienceModule,
  Retry,
  Timeout,
} from 'resilience4nest';

export interface Quote {
  sku: string;
  price: number | 'unknown';
}

@Injectable()
export class PricingClient {
  private readonly baseUrl = process.env.PRICING_URL ?? 'http://127.0.0.1:4000';

  @Fallback(CallNotPermittedError, 'priceUnknown')
  @Retry('pricing')
  @CircuitBreaker('pricing')
  @Timeout('pricing')
  async quote(sku: string): Promise<Quote> {
    const response = await fetch(`${this.baseUrl}/prices/${sku}`, {
      signal: currentSignal(), // aborted when this attempt times out
      headers: deadlineHeaders(), // tells the pricing service how long we will wait
    });
    if (!response.ok)
      throw Object.assign(new Error(`pricing answered ${response.status}`), { status: response.status });
    return (await response.json()) as Quote;
  }

  priceUnknown(sku: string): Quote {
    return { sku, price: 'unknown' };
  }
}

@Controller('quotes')
export class QuotesController {
  constructor(private readonly pricing: PricingClient) {}

  @Get(':sku')
  quote(@Param('sku') sku: string): Promise<Quote> {
    return this.pricing.quote(sku);
  }
}

@Module({
  imports: [
    ResilienceModule.forRoot({
      retry: {
        configs: { default: { maxAttempts: 3, waitDuration: '200ms', enableExponentialBackoff: true } },
        instances: { pricing: { budget: { ratio: 0.1, maxTokens: 10 } } },
      },
      circuitBreaker: {
        instances: { pricing: { slidingWindowSize: 20, minimumNumberOfCalls: 10, waitDurationInOpenState: '10s' } },
      },
      timeLimiter: { instances: { pricing: { timeoutDuration: '800ms' } } },
      deadline: { defaultBudget: '2s' },
    }),
  ],
  controllers: [QuotesController],
  providers: [PricingClient],
})
export class AppModule {}

/** Starts the application on `port` of `host` (every IPv4 interface by default); answers it, for `app.close()`. */
export async function bootstrap(port = 3000, host = '0.0.0.0'): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule);
  app.useGlobalFilters(new ResilienceExceptionFilter()); // 503 + Retry-After, 504, problem+json
  await app.listen(port, host);
  return app;
}
