import { INestApplicationContext, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Observable, of } from 'rxjs';
import {
  Bulkhead,
  CircuitBreaker,
  Fallback,
  RateLimiter,
  ResilienceModule,
  ResilienceModuleOptions,
  ResiliencePipeline,
  ResilienceRegistry,
  Retry,
  Timeout,
} from '../lib';

/**
 * The settings every compared stack uses, so the peers can be configured
 * alike: 3 attempts 500 ms apart, Resilience4j's default breaker (last 100
 * calls, opens at 50 %, 60 s open), 1 s time limit, 25 concurrent calls;
 * the rate limiter has Resilience4j's defaults (50 per 500 ns, never reached
 * by sequential calls, so each call also refills a new period).
 */
export const BENCH_OPTIONS: ResilienceModuleOptions = {
  retry: { instances: { bench: { maxAttempts: 3, waitDuration: '500ms' } } },
  circuitBreaker: {
    instances: {
      bench: {
        slidingWindowType: 'COUNT_BASED',
        slidingWindowSize: 100,
        failureRateThreshold: 50,
        waitDurationInOpenState: '60s',
      },
    },
  },
  timeLimiter: { instances: { bench: { timeoutDuration: '1s' } } },
  bulkhead: { instances: { bench: { maxConcurrentCalls: 25 } } },
  rateLimiter: { instances: { bench: { limitForPeriod: 50, limitRefreshPeriod: '500ns', timeoutDuration: '5s' } } },
};

/** The key of the keyed stack: the host, its second argument (one function, so a call reads one key). */
const byHost = (_x: number, host: string): string => host;

/**
 * One provider, one trivial async body, several decorations of it. `bare`
 * is the baseline: the same body on the same instance with no decorator.
 */
@Injectable()
export class BenchService {
  /** Times a fallback answered; must stay 0 on the happy path. */
  fallbacks = 0;

  async bare(x: number): Promise<number> {
    return x + 1;
  }

  @Retry('bench')
  @Timeout('bench')
  async retryTimeout(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  @Retry('bench')
  @CircuitBreaker('bench')
  @Timeout('bench')
  @Bulkhead('bench')
  async fullStack(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  @Retry('bench')
  @CircuitBreaker('bench')
  @RateLimiter('bench')
  @Timeout('bench')
  @Bulkhead('bench')
  async fullStackRateLimited(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  @Retry('bench')
  @CircuitBreaker('bench', { key: byHost })
  @Timeout('bench')
  @Bulkhead('bench', { key: byHost })
  async fullStackKeyed(x: number, _host: string): Promise<number> {
    return x + 1;
  }

  @RateLimiter('bench')
  async rateLimiterOnly(x: number): Promise<number> {
    return x + 1;
  }

  @Retry('bench')
  async retryOnly(x: number): Promise<number> {
    return x + 1;
  }

  @Timeout('bench')
  async timeoutOnly(x: number): Promise<number> {
    return x + 1;
  }

  @CircuitBreaker('bench')
  async breakerOnly(x: number): Promise<number> {
    return x + 1;
  }

  @Bulkhead('bench')
  async bulkheadOnly(x: number): Promise<number> {
    return x + 1;
  }

  @Fallback(Error, 'fallback')
  async fallbackOnly(x: number): Promise<number> {
    return x + 1;
  }

  /** The Observable baseline: a cold source that emits once and completes, as an HTTP call's does. */
  bareObservable(x: number): Observable<number> {
    return of(x + 1);
  }

  @Retry('bench')
  @Timeout('bench')
  retryTimeoutObservable(x: number): Observable<number> {
    return of(x + 1);
  }

  fallback(_x: number, _error: unknown): number {
    this.fallbacks++;
    return -1;
  }
}

@Module({ imports: [ResilienceModule.forRoot(BENCH_OPTIONS)], providers: [BenchService] })
class BenchModule {}

/** Boots a real Nest application context (the explorer composes the pipelines at init). */
export async function bootNest(): Promise<{ app: INestApplicationContext; service: BenchService }> {
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: false });
  return { app, service: app.get(BenchService) };
}

/**
 * The full stack composed in code: the 'bench' retry, breaker, time limit
 * and bulkhead of `registry` with a fallback to `service.fallback`, as the
 * decorators compose them on `BenchService.fullStack`.
 */
export function benchPipeline(registry: ResilienceRegistry, service: BenchService): ResiliencePipeline {
  return registry.pipeline({
    name: 'bench',
    retry: 'bench',
    circuitBreaker: 'bench',
    timeLimiter: 'bench',
    bulkhead: 'bench',
    fallback: { errors: Error, handler: () => service.fallback(1, undefined) },
  });
}
