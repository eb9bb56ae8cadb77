import { Controller, Get, INestApplication, NotFoundException, Param, UseFilters } from '@nestjs/common';
import { APP_FILTER, HttpAdapterHost } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReuseError,
  IdempotencyOutcomeUnknownError,
  MaxRetriesExceededError,
  RateLimitedError,
  RESILIENCE_PROBLEMS,
  ResilienceError,
  ResilienceExceptionFilter,
  TimeoutExceededError,
} from '../../lib';
import { createPlatformApp, initPlatformApp, mediaType, Platform, PLATFORMS } from '../support/platforms';

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
  'idempotency-outcome-unknown': () => new IdempotencyOutcomeUnknownError('orders'),
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

/** The ways an application installs the filter globally. */
const REGISTRATIONS = {
  'useGlobalFilters(new ResilienceExceptionFilter())': {
    providers: [],
    install: (app: INestApplication) => app.useGlobalFilters(new ResilienceExceptionFilter()),
  },
  'useGlobalFilters with the HttpAdapterHost': {
    providers: [],
    install: (app: INestApplication) => app.useGlobalFilters(new ResilienceExceptionFilter(app.get(HttpAdapterHost))),
  },
  APP_FILTER: { providers: [{ provide: APP_FILTER, useClass: ResilienceExceptionFilter }], install: () => undefined },
} as const;

type Registration = keyof typeof REGISTRATIONS;

async function boot(
  platform: Platform,
  controllers: Array<new () => unknown>,
  registration?: Registration,
): Promise<INestApplication> {
  const setup = registration === undefined ? undefined : REGISTRATIONS[registration];
  const moduleRef = await Test.createTestingModule({ controllers, providers: [...(setup?.providers ?? [])] }).compile();
  const app = createPlatformApp(moduleRef, platform);
  setup?.install(app);
  return initPlatformApp(app);
}

describe.each(PLATFORMS)('ResilienceExceptionFilter (e2e, %s)', (platform) => {
  describe.each(Object.keys(REGISTRATIONS) as Registration[])('installed by %s', (registration) => {
    let app: INestApplication;

    beforeAll(async () => {
      app = await boot(platform, [FailingController], registration);
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
      ['idempotency-outcome-unknown', 500, undefined, 'orders'],
      ['max-retries-exceeded', 502, undefined, 'inventory'],
    ])('answers %s with %d, Retry-After %s and a problem body', async (kind, status, retryAfter, name) => {
      const res = await request(app.getHttpServer()).get(`/fail/${kind}?token=secret`);
      const error = ERRORS[kind]();

      expect(res.status).toBe(status);
      expect(mediaType(res.headers['content-type'])).toBe('application/problem+json');
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

    it('leaves other errors to Nest', async () => {
      const res = await request(app.getHttpServer()).get('/fail/unknown');
      expect(res.status).toBe(404);
      expect(mediaType(res.headers['content-type'])).toBe('application/json');
      expect(res.body).toMatchObject({ statusCode: 404, message: 'no such kind: unknown' });
    });
  });

  it('works per controller through @UseFilters, for rejected promises', async () => {
    const app = await boot(platform, [ScopedController]);
    try {
      const res = await request(app.getHttpServer()).get('/scoped');
      expect(res.status).toBe(503);
      expect(mediaType(res.headers['content-type'])).toBe('application/problem+json');
      expect(res.headers['retry-after']).toBe('3');
      expect(JSON.parse(res.text)).toMatchObject({
        type: RESILIENCE_PROBLEMS.BULKHEAD_FULL.type,
        instance: '/scoped',
        name: 'reports',
      });
    } finally {
      await app.close();
    }
  });
});

it('gives every kind its own problem type URI', () => {
  const types = Object.values(RESILIENCE_PROBLEMS).map((p) => p.type);
  expect(new Set(types).size).toBe(types.length);
  for (const type of types) expect(type).toMatch(/^https:\/\/resilience4nest\.dev\/problems\/[a-z-]+$/);
});
