import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { firstValueFrom, Observable, throwError } from 'rxjs';
import { Fallback, ResilienceModule } from '../../lib';

class Unavailable extends Error {}

/** What each handler was given, in order. */
const seen: unknown[][] = [];

@Injectable()
class Prices {
  @Fallback(Unavailable, 'cached')
  async price(sku: string, region?: string, _currency?: string): Promise<string> {
    throw new Unavailable(`${sku} ${region ?? '-'}`);
  }

  cached(sku: string, region: string | undefined, currency: string | undefined, error: Unavailable): string {
    seen.push([sku, region, currency, error]);
    return `cached ${sku} ${region ?? 'any'} ${error instanceof Unavailable ? 'after Unavailable' : 'without the error'}`;
  }

  @Fallback(Unavailable, 'listedLater')
  async list(page = 1, size = 20): Promise<string> {
    throw new Unavailable(`page ${page} of ${size}`);
  }

  listedLater(page: number | undefined, size: number | undefined, error: Unavailable): string {
    seen.push([page, size, error]);
    return `later ${page} ${size}`;
  }

  @Fallback(Unavailable, 'streamed')
  stream(sku: string, region?: string): Observable<string> {
    return throwError(() => new Unavailable(`${sku} ${region ?? '-'}`));
  }

  streamed(sku: string, region: string | undefined, error: Unavailable): string {
    seen.push([sku, region, error]);
    return `streamed ${sku}`;
  }

  @Fallback(Unavailable, 'tagged')
  async tag(...tags: string[]): Promise<string> {
    throw new Unavailable(tags.join());
  }

  tagged(...tagsThenError: unknown[]): string {
    seen.push(tagsThenError);
    return 'tagged';
  }
}

describe('@Fallback handlers get the error after every declared parameter', () => {
  let prices: Prices;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({})],
      providers: [Prices],
    }).compile();
    await moduleRef.init();
    prices = moduleRef.get(Prices);
  });

  beforeEach(() => {
    seen.length = 0;
  });

  it('passes undefined for each optional argument the caller left out, then the error', async () => {
    await expect(prices.price('sku-1')).resolves.toBe('cached sku-1 any after Unavailable');
    expect(seen).toHaveLength(1);
    expect(seen[0].slice(0, 3)).toEqual(['sku-1', undefined, undefined]);
    expect(seen[0][3]).toBeInstanceOf(Unavailable);

    await expect(prices.price('sku-2', 'eu')).resolves.toBe('cached sku-2 eu after Unavailable');
    expect(seen[1].slice(0, 3)).toEqual(['sku-2', 'eu', undefined]);
    expect(seen[1][3]).toBeInstanceOf(Unavailable);
  });

  it('passes undefined for parameters with defaults the caller left out', async () => {
    await expect(prices.list()).resolves.toBe('later undefined undefined');
    expect(seen[0].slice(0, 2)).toEqual([undefined, undefined]);
    expect(seen[0][2]).toBeInstanceOf(Unavailable);
  });

  it('does the same for an Observable method', async () => {
    await expect(firstValueFrom(prices.stream('sku-3'))).resolves.toBe('streamed sku-3');
    expect(seen[0].slice(0, 2)).toEqual(['sku-3', undefined]);
    expect(seen[0][2]).toBeInstanceOf(Unavailable);
  });

  it('passes every argument of a rest parameter, then the error', async () => {
    await expect(prices.tag('a', 'b', 'c')).resolves.toBe('tagged');
    expect(seen[0].slice(0, 3)).toEqual(['a', 'b', 'c']);
    expect(seen[0][3]).toBeInstanceOf(Unavailable);
  });
});
