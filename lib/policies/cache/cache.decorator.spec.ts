import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Observable } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { ResilienceModule } from '../../nest/resilience.module';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { Fallback } from '../fallback/fallback.decorator';
import { Retry } from '../retry/retry.decorator';
import { Cache } from './cache.decorator';

class Unavailable extends Error {
  readonly status = 503;
}

interface Rate {
  currency: string;
  rate: number;
  fresh: boolean;
  ageMs: number;
}

@Injectable()
class Rates {
  calls = 0;
  down = false;

  @Fallback(Unavailable, 'unknown')
  @Cache('rates')
  @Retry('rates')
  async rate(currency: string): Promise<Rate> {
    this.calls++;
    if (this.down) throw new Unavailable('rates API down');
    return { currency, rate: 1 + this.calls / 100, fresh: true, ageMs: 0 };
  }

  unknown(currency: string): Rate {
    return { currency, rate: NaN, fresh: false, ageMs: NaN };
  }

  @Cache(undefined, { ttl: '1m', coalesce: true })
  ticks(): Observable<number> {
    return new Observable<number>((s) => {
      this.calls++;
      s.next(1);
      s.next(2);
      s.complete();
    });
  }
}

async function boot(clock: VirtualClock): Promise<{ rates: Rates; registry: ResilienceRegistry }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        clock,
        metrics: false,
        retry: {
          instances: { rates: { maxAttempts: 2, waitDuration: 10, jitter: 'none', retryExceptions: [Unavailable] } },
        },
        cache: {
          instances: {
            rates: {
              staleIfError: '10m',
              mark: (r: Rate, { ageMs }) => ({ ...r, fresh: false, ageMs }),
            },
          },
        },
      }),
    ],
    providers: [Rates],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return { rates: moduleRef.get(Rates), registry: moduleRef.get(ResilienceRegistry) };
}

describe('@Cache', () => {
  it('keys by the arguments, answers the last known good after the retry gave up, and leaves a cold start to the fallback', async () => {
    const clock = new VirtualClock();
    const { rates, registry } = await boot(clock);
    expect(await rates.rate('EUR')).toEqual({ currency: 'EUR', rate: 1.01, fresh: true, ageMs: 0 });
    rates.down = true;
    await clock.advance(60_000);
    const stale = rates.rate('EUR');
    await clock.advance(10);
    expect(await stale).toEqual({ currency: 'EUR', rate: 1.01, fresh: false, ageMs: 60_010 });
    expect(rates.calls).toBe(3);
    const cold = rates.rate('GBP');
    await clock.advance(10);
    expect(await cold).toEqual({ currency: 'GBP', rate: NaN, fresh: false, ageMs: NaN });
    expect(registry.cache('rates').metrics).toEqual({ hit: 0, miss: 2, stale: 1, coalesced: 0 });
  });

  it('caches an Observable method by its last value, in a private instance named after the method', async () => {
    const clock = new VirtualClock();
    const { rates, registry } = await boot(clock);
    const values: number[] = [];
    rates.ticks().subscribe((v) => values.push(v));
    rates.ticks().subscribe((v) => values.push(v));
    await clock.advance(0);
    rates.ticks().subscribe((v) => values.push(v));
    await clock.advance(0);
    expect(values).toEqual([2, 2, 2]);
    expect(rates.calls).toBe(1);
    const own = registry.caches.find((c) => c.name === 'Rates.ticks');
    expect(own?.metrics).toEqual({ hit: 1, miss: 1, stale: 0, coalesced: 1 });
  });
});
