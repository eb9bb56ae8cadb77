import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ResilienceEndpointsModule, ResilienceRegistry } from '../../lib';
import {
  INVALID_UPDATE_STATE,
  NO_KEYS_ROUTE,
  UNKNOWN_STATUS_INSTANCE,
} from '../../lib/observability/observability.messages';
import { PLATFORMS } from '../support/platforms';
import { bootApp, driveTraffic } from './kit';

/** Lets a request through when it says it is an operator. */
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

const types = (events: Array<{ type: string }>): string[] => events.map((e) => e.type);

describe.each(PLATFORMS)('status endpoints (%s)', (platform) => {
  let app: INestApplication;

  beforeAll(async () => {
    const booted = await bootApp(
      { metrics: false },
      {
        imports: [
          ResilienceEndpointsModule.forRoot({
            status: { public: true, eventBufferSize: 3, writable: { guards: [OperatorGuard] } },
          }),
        ],
      },
      platform,
    );
    app = booted.app;
    await driveTraffic(booted.clock, booted.shop);
  });

  afterAll(() => app.close());

  const get = (path: string) => request(app.getHttpServer()).get(`/actuator${path}`);

  it('list every instance with its config and live state', async () => {
    const { body } = await get('').expect(200);
    expect(Object.keys(body)).toEqual([
      'circuitBreakers',
      'retries',
      'bulkheads',
      'timeLimiters',
      'rateLimiters',
      'fallbacks',
      'caches',
    ]);
    expect(body.circuitBreakers).toEqual([
      expect.objectContaining({
        name: 'psp',
        derived: false,
        state: 'OPEN',
        config: expect.objectContaining({
          failureRateThreshold: 50,
          slidingWindowSize: 2,
          waitDurationInOpenState: 60_000,
          recordExceptions: [],
        }),
        metrics: expect.objectContaining({ failureRate: 50, numberOfBufferedCalls: 2, numberOfNotPermittedCalls: 1 }),
      }),
    ]);
    expect(body.retries).toEqual([
      expect.objectContaining({
        name: 'inventory',
        config: expect.objectContaining({ maxAttempts: 3, budget: { ratio: 0.1, maxTokens: 2 } }),
        metrics: expect.objectContaining({ failedCallsWithRetry: 1, budgetDenied: 1, budgetTokens: 0 }),
      }),
    ]);
    expect(body.bulkheads).toEqual([
      expect.objectContaining({
        name: 'pool',
        metrics: { availableConcurrentCalls: 1, maxAllowedConcurrentCalls: 1, queueDepth: 0 },
      }),
    ]);
    expect(body.timeLimiters).toEqual([
      expect.objectContaining({ name: 'slow', config: { timeoutDuration: 100, cancelRunningFuture: true } }),
    ]);
    expect(body.fallbacks).toEqual([{ name: 'Shop.quote', derived: false }]);
  });

  it('serve one kind, and one instance by name', async () => {
    expect((await get('/bulkheads').expect(200)).body.bulkheads).toHaveLength(1);
    expect((await get('/circuitbreakers/psp').expect(200)).body.circuitBreakers[0].state).toBe('OPEN');
    expect((await get('/circuitbreakers/nope').expect(404)).body.detail).toBe(
      UNKNOWN_STATUS_INSTANCE('circuitBreaker', 'nope'),
    );
    await get('/nothing').expect(404);
  });

  it('list the kept keys of an instance used per key, each with its state, and none of a name without keys', async () => {
    const registry = app.get(ResilienceRegistry);
    registry.circuitBreaker('psp', { key: 'a.example' });
    registry.circuitBreaker('psp', { key: 'b.example' }).transitionToOpenState();
    registry.retry('inventory', { key: 'eu' });
    const { body } = await get('/circuitbreakers/psp/keys').expect(200);
    expect(body.circuitBreakers).toEqual([
      expect.objectContaining({ name: 'psp', key: 'a.example', derived: false, state: 'CLOSED' }),
      expect.objectContaining({ name: 'psp', key: 'b.example', derived: false, state: 'OPEN' }),
    ]);
    expect(body.circuitBreakers[1].metrics).toEqual(expect.objectContaining({ numberOfBufferedCalls: 0 }));
    expect((await get('/retries/inventory/keys').expect(200)).body).toEqual({
      retries: [expect.objectContaining({ name: 'inventory', key: 'eu' })],
    });
    expect((await get('/bulkheads/pool/keys').expect(200)).body).toEqual({ bulkheads: [] });
    const unknown = await get('/circuitbreakers/nope/keys').expect(404);
    expect(unknown.body.detail).toBe(UNKNOWN_STATUS_INSTANCE('circuitBreaker', 'nope'));
    expect((await get('/circuitbreakerevents/psp/keys').expect(404)).body.detail).toBe(
      NO_KEYS_ROUTE('circuitbreakerevents', [
        'circuitbreakers',
        'retries',
        'bulkheads',
        'timelimiters',
        'ratelimiters',
        'fallbacks',
        'caches',
      ]),
    );
    // Asking for an unknown name makes no instance of it.
    expect(registry.all('circuitBreaker').map((b) => b.name)).not.toContain('nope');
  });

  it('keep the last eventBufferSize events of each instance, oldest first', async () => {
    const { body } = await get('/circuitbreakerevents/psp').expect(200);
    expect(types(body.circuitBreakerEvents)).toEqual(['FAILURE_RATE_EXCEEDED', 'STATE_TRANSITION', 'NOT_PERMITTED']);
    expect(body.circuitBreakerEvents[1]).toMatchObject({ name: 'psp', stateTransition: 'CLOSED_TO_OPEN' });
    expect(new Date(body.circuitBreakerEvents[1].creationTime).toISOString()).toBe(
      body.circuitBreakerEvents[1].creationTime,
    );
  });

  it('describe each kind of event', async () => {
    const retries = (await get('/retryevents').expect(200)).body.retryEvents;
    expect(retries).toEqual([
      expect.objectContaining({ type: 'RETRY', name: 'inventory', attempts: 1, waitMs: 0, errorClass: 'Unavailable' }),
      expect.objectContaining({ type: 'RETRY_STOPPED', attempts: 2, reason: 'budget' }),
      expect.objectContaining({ type: 'ERROR', attempts: 2, errorClass: 'Unavailable' }),
    ]);
    const bulkhead = (await get('/bulkheadevents/pool').expect(200)).body.bulkheadEvents;
    expect(bulkhead).toEqual([
      expect.objectContaining({ type: 'CALL_PERMITTED' }),
      expect.objectContaining({ type: 'CALL_REJECTED', reason: 'queue-full' }),
      expect.objectContaining({ type: 'CALL_FINISHED', durationMs: 0 }),
    ]);
    expect(types((await get('/timelimiterevents').expect(200)).body.timeLimiterEvents)).toEqual(['TIMEOUT']);
    expect((await get('/fallbackevents/Shop.quote').expect(200)).body.fallbackEvents).toEqual([
      expect.objectContaining({ type: 'FALLBACK', name: 'Shop.quote', kind: 'CallNotPermittedError' }),
    ]);
  });

  it("change a breaker's state only through the guard", async () => {
    const post = (name: string, body: unknown) =>
      request(app.getHttpServer())
        .post(`/actuator/circuitbreakers/${name}`)
        .send(body as object);
    await post('psp', { updateState: 'CLOSE' }).expect(403);
    expect(app.get(ResilienceRegistry).circuitBreaker('psp').state).toBe('OPEN');

    const bad = await post('psp', { updateState: 'SHUT' }).set('x-operator', 'yes').expect(400);
    expect(bad.body.detail).toBe(INVALID_UPDATE_STATE('SHUT', ['CLOSE', 'FORCE_OPEN', 'DISABLE', 'METRICS_ONLY']));
    await post('nope', { updateState: 'CLOSE' }).set('x-operator', 'yes').expect(404);

    const { body } = await post('psp', { updateState: 'FORCE_OPEN' }).set('x-operator', 'yes').expect(200);
    expect(body.circuitBreakers[0].state).toBe('FORCED_OPEN');
    await post('psp', { updateState: 'CLOSE' }).set('x-operator', 'yes').expect(200);
    expect(app.get(ResilienceRegistry).circuitBreaker('psp').state).toBe('CLOSED');
  });
});

describe.each(PLATFORMS)('status endpoints by default (%s)', (platform) => {
  it('have no route that changes state, and take guards for reading', async () => {
    const { app } = await bootApp(
      { metrics: false },
      {
        imports: [ResilienceEndpointsModule.forRoot({ status: { path: '/ops/resilience/', guards: [OperatorGuard] } })],
      },
      platform,
    );
    await request(app.getHttpServer()).get('/ops/resilience/circuitbreakers').expect(403);
    await request(app.getHttpServer()).get('/ops/resilience/circuitbreakers').set('x-operator', 'yes').expect(200);
    await request(app.getHttpServer())
      .post('/ops/resilience/circuitbreakers/psp')
      .set('x-operator', 'yes')
      .send({ updateState: 'CLOSE' })
      .expect(404);
    await app.close();
  });
});
