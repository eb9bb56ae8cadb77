import { Controller, Get, INestApplication, NotFoundException, Param, UseFilters } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReuseError,
  MaxRetriesExceededError,
  RateLimitedError,
  ResilienceError,
  TimeoutExceededError,
} from '../errors';
import { ResilienceExceptionFilter } from './resilience-exception.filter';
import { RESILIENCE_PROBLEMS, resilienceProblem, retryAfterSeconds } from './resilience-problems';

const ERRORS: Record<string, () => ResilienceError> = {
  'call-not-permitted': () => new CallNotPermittedError('payments', 'OPEN', 12_300),
  'forced-open': () => new CallNotPermittedError('payments', 'FORCED_OPEN'),
  'bulkhead-full': () => new BulkheadFullError('reports', 'queue-full', 250),
  'timeout-exceeded': () => new TimeoutExceededError('inventory', 2000),
  'deadline-exceeded': () => new DeadlineExceededError('inventory'),
  'rate-limited': () => new RateLimitedError('api', 2000),
  'idempotency-key-missing': () => new IdempotencyKeyMissingError('orders', 'Idempotency-Key header is required'),
  'idempotency-key-in-progress': () => new IdempotencyKeyInProgressError('orders', 1001),
  'idempotency-key-reuse': () => new IdempotencyKeyReuseError('orders'),
  'max-retries-exceeded': () => new MaxRetriesExceededError('inventory', 3, { status: 500 }),
};

@Controller('fail')
class FailingController {
  @Get(':kind')
  fail(@Param('kind') kind: string): never {
    const make = ERRORS[kind];
    if (make === undefined) throw new NotFoundException(`no such kind: ${kind}`);
    throw make();
  }
}

@Controller('scoped')
@UseFilters(ResilienceExceptionFilter)
class ScopedController {
  @Get()
  fail(): Promise<never> {
    return Promise.reject(new BulkheadFullError('reports', 'wait-timeout', 3000));
  }
}

async function boot(controllers: Array<new () => unknown>, global: boolean): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ controllers }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  if (global) app.useGlobalFilters(new ResilienceExceptionFilter());
  await app.init();
  return app;
}

describe('ResilienceExceptionFilter (e2e, Express)', () => {
  describe('as a global filter', () => {
    let app: INestApplication;

    beforeAll(async () => {
      app = await boot([FailingController], true);
    });

    afterAll(() => app.close());

    it.each([
      ['call-not-permitted', 503, '13', 'payments'],
      ['forced-open', 503, '1', 'payments'],
      ['bulkhead-full', 503, '1', 'reports'],
      ['timeout-exceeded', 504, undefined, 'inventory'],
      ['deadline-exceeded', 504, undefined, 'inventory'],
      ['rate-limited', 429, '2', 'api'],
      ['idempotency-key-missing', 400, undefined, 'orders'],
      ['idempotency-key-in-progress', 409, '2', 'orders'],
      ['idempotency-key-reuse', 422, undefined, 'orders'],
      ['max-retries-exceeded', 502, undefined, 'inventory'],
    ])('answers %s with %d, Retry-After %s and a problem body', async (kind, status, retryAfter, name) => {
      const res = await request(app.getHttpServer()).get(`/fail/${kind}?token=secret`);
      const error = ERRORS[kind]();

      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['retry-after']).toBe(retryAfter);
      const problem = RESILIENCE_PROBLEMS[error.code as keyof typeof RESILIENCE_PROBLEMS];
      expect(JSON.parse(res.text)).toEqual({
        type: problem.type,
        title: problem.title,
        status,
        detail: error.message,
        instance: `/fail/${kind}`,
        name,
      });
    });

    it('gives every kind its own problem type URI', () => {
      const types = Object.values(RESILIENCE_PROBLEMS).map((p) => p.type);
      expect(new Set(types).size).toBe(types.length);
      for (const type of types) expect(type).toMatch(/^https:\/\/resilience4nest\.dev\/problems\/[a-z-]+$/);
    });

    it('leaves other errors to Nest', async () => {
      const res = await request(app.getHttpServer()).get('/fail/unknown');
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ statusCode: 404, message: 'no such kind: unknown' });
    });
  });

  it('works per controller through @UseFilters, for rejected promises', async () => {
    const app = await boot([ScopedController], false);
    try {
      const res = await request(app.getHttpServer()).get('/scoped');
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['retry-after']).toBe('3');
      expect(JSON.parse(res.text)).toMatchObject({ type: RESILIENCE_PROBLEMS.BULKHEAD_FULL.type, instance: '/scoped', name: 'reports' });
    } finally {
      await app.close();
    }
  });
});

describe('retryAfterSeconds', () => {
  it('rounds up to whole seconds, at least 1, with a default when there is no hint', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(60_000)).toBe(60);
    expect(retryAfterSeconds(undefined)).toBe(1);
  });
});

describe('resilienceProblem', () => {
  it('answers an unknown ResilienceError subclass with a plain 500', () => {
    class CustomError extends ResilienceError {
      readonly code = 'CUSTOM';
      constructor() {
        super('custom', 'something custom');
      }
    }
    const problem = resilienceProblem(new CustomError());
    expect(problem.status).toBe(500);
    expect(problem.headers).toEqual({ 'Content-Type': 'application/problem+json' });
    expect(problem.body).toEqual({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'something custom', name: 'custom' });
  });

  it('gives a subclass its parent kind answer through the shared code', () => {
    class BreakerOpenForMaintenance extends CallNotPermittedError {}
    const problem = resilienceProblem(new BreakerOpenForMaintenance('payments', 'FORCED_OPEN', 90_000), '/pay');
    expect(problem.status).toBe(503);
    expect(problem.headers['Retry-After']).toBe('90');
    expect(problem.body.instance).toBe('/pay');
  });
});
