import { Controller, Get, INestApplication, Injectable, Param } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { ResilienceModule, ResilienceRegistry, Retry, Timeout, VirtualClock } from '../../lib';

class Flaky extends Error {
  constructor(readonly status = 503) {
    super('flaky');
  }
}

const clock = new VirtualClock();

@Injectable()
class Downstream {
  calls = 0;
  failFirst = 0;

  @Retry('downstream')
  @Timeout(1000)
  async fetch(id: string): Promise<string> {
    this.calls++;
    if (this.calls <= this.failFirst) throw new Flaky();
    return `item-${id}`;
  }

  /** Each attempt takes 600 ms: two fit a 1 s limit only when the limit is per attempt, inside the retry. */
  @Timeout(1000)
  @Retry('downstream')
  async reversed(): Promise<number> {
    this.calls++;
    await new Promise<void>((resolve) => clock.setTimeout(resolve, 600));
    if (this.calls <= this.failFirst) throw new Flaky();
    return this.calls;
  }
}

@Controller('items')
class ItemsController {
  constructor(private readonly downstream: Downstream) {}

  @Retry('controller', { jitter: 'none', waitDuration: 0 })
  @Get(':id')
  async get(@Param('id') id: string): Promise<{ id: string; value: string }> {
    return { id, value: await this.downstream.fetch(id) };
  }
}

describe('decorator wiring', () => {
  let app: INestApplication;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          random: () => 0.5,
          retry: { instances: { downstream: { maxAttempts: 3, waitDuration: 0 } } },
        }),
      ],
      controllers: [ItemsController],
      providers: [Downstream],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterEach(() => app.close());

  it('keeps route metadata and the method name when decorators sit above and below @Get', () => {
    const method = ItemsController.prototype.get;
    expect(method.name).toBe('get');
    expect(Reflect.getMetadata(PATH_METADATA, method)).toBe(':id');
    expect(Reflect.getMetadata(METHOD_METADATA, method)).toBe(0);
  });

  it('retries through the composed pipeline of a provider called from a controller', async () => {
    const downstream = app.get(Downstream);
    downstream.failFirst = 2;
    const response = await request(app.getHttpServer()).get('/items/7').expect(200);
    expect(response.body).toEqual({ id: '7', value: 'item-7' });
    expect(downstream.calls).toBe(3);
    expect(app.get(ResilienceRegistry).retry('downstream').metrics.successfulCallsWithRetry).toBe(1);
  });

  it('composes in the fixed order whatever order the decorators are written in', async () => {
    const downstream = app.get(Downstream);
    downstream.failFirst = 1;
    const answer = downstream.reversed();
    await clock.advance(1200);
    await expect(answer).resolves.toBe(2);
    expect(app.get(ResilienceRegistry).retry('downstream').metrics.successfulCallsWithRetry).toBe(1);
  });
});
