import * as common from '@nestjs/common';
import { Injectable, Logger, Module, Scope } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { ResilienceModule, Retry, VirtualClock } from '../../lib';
import {
  CALLED_BEFORE_BOOTSTRAP,
  DECORATED_BY_ANOTHER_COPY,
  UNWIRED_AFTER_BOOTSTRAP,
} from '../../lib/kernel/resilience.messages';

@Injectable()
class Quotes {
  calls = 0;

  @Retry('quotes')
  async quote(): Promise<number> {
    return ++this.calls;
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequestQuotes {
  @Retry('quotes')
  async quote(): Promise<string> {
    return 'ran';
  }
}

@Module({ providers: [Quotes, PerRequestQuotes] })
class QuotesModule {}

async function boot(): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock: new VirtualClock() }), QuotesModule],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('a decorated method whose pipeline was never built', () => {
  let warnings: string[];
  let errors: string[];

  beforeEach(() => {
    warnings = [];
    errors = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
    jest.spyOn(Logger.prototype, 'error').mockImplementation((m: unknown) => void errors.push(String(m)));
  });

  afterEach(() => jest.restoreAllMocks());

  it('warns once when called before any resilience module has bootstrapped', async () => {
    const early = new Quotes();
    await expect(early.quote()).resolves.toBe(1);
    await early.quote();
    expect(warnings.filter((w) => w === CALLED_BEFORE_BOOTSTRAP('Quotes.quote'))).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('logs an error naming the class and method when called unwired after bootstrap', async () => {
    const moduleRef = await boot();
    const stray = new Quotes();
    await expect(stray.quote()).resolves.toBe(1);
    await stray.quote();
    expect(errors.filter((e) => e === UNWIRED_AFTER_BOOTSTRAP('Quotes.quote'))).toHaveLength(1);
    // The instance Nest created is wired: its calls log nothing.
    await moduleRef.get(Quotes).quote();
    expect(errors).toHaveLength(1);
    await moduleRef.close();
  });

  it('logs an error for a request-scoped provider called after bootstrap', async () => {
    const moduleRef = await boot();
    const perRequest = await moduleRef.resolve(PerRequestQuotes);
    await expect(perRequest.quote()).resolves.toBe('ran');
    expect(errors).toEqual([UNWIRED_AFTER_BOOTSTRAP('PerRequestQuotes.quote')]);
    await moduleRef.close();
  });

  it('goes back to the before-bootstrap warning once every module has shut down', async () => {
    const moduleRef = await boot();
    await moduleRef.close();
    class Late {
      @Retry('quotes')
      async quote(): Promise<string> {
        return 'late';
      }
    }
    await new Late().quote();
    expect(errors).toEqual([]);
    expect(warnings).toContain(CALLED_BEFORE_BOOTSTRAP('Late.quote'));
  });

  it('reports methods decorated by a second copy of the package, at bootstrap and when called', async () => {
    let secondCopy: typeof import('../../lib') | undefined;
    jest.isolateModules(() => {
      // The second copy shares @nestjs/common, as a duplicate install in node_modules would.
      jest.doMock('@nestjs/common', () => common);
      secondCopy = require('../../lib');
    });
    jest.dontMock('@nestjs/common');
    const { Retry: RetryOfSecondCopy } = secondCopy!;
    expect(RetryOfSecondCopy).not.toBe(Retry);
    @Injectable()
    class Rates {
      @RetryOfSecondCopy('rates')
      async rate(): Promise<number> {
        return 1.1;
      }
    }
    @Module({ providers: [Rates] })
    class RatesModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock: new VirtualClock() }), RatesModule],
    }).compile();
    await moduleRef.init();
    expect(errors).toEqual([DECORATED_BY_ANOTHER_COPY('Rates.rate')]);

    await expect(moduleRef.get(Rates).rate()).resolves.toBe(1.1);
    expect(errors).toEqual([DECORATED_BY_ANOTHER_COPY('Rates.rate'), UNWIRED_AFTER_BOOTSTRAP('Rates.rate')]);
    await moduleRef.close();
  });
});
