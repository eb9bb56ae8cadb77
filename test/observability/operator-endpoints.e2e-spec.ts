import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { PostgresOutboxStore, ResilienceEndpointsModule, ResilienceModule, VirtualClock } from '../../lib';
import { STATUS_UNGUARDED } from '../../lib/observability/observability.messages';
import { tableName } from '../outbox/outbox-kit';
import { createPlatformApp, initPlatformApp, PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';

/** Lets a request through when it says it is an operator. */
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

const OPERATOR = { 'x-operator': 'yes' };

describe('the status endpoints without guards', () => {
  it.each([
    ['status: {}', {}],
    ['status: true', true],
    ['guards only on the writable routes', { writable: { guards: [OperatorGuard] } }],
  ])('refuse to start, naming guards and public: true (%s)', (_, status) => {
    expect(() => ResilienceEndpointsModule.forRoot({ status })).toThrow(STATUS_UNGUARDED);
  });
});

describe.each(PLATFORMS)('the operator endpoints over HTTP (%s)', (platform) => {
  const databaseUrl = serverOrSkip('postgres');
  if (databaseUrl === undefined) return;

  let pool: Pool;
  let table: string;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    pool = new Pool({ connectionString: databaseUrl, max: 2 });
    table = tableName();
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: false,
          circuitBreaker: { instances: { psp: {} } },
          faultInjection: { enabled: true },
          outbox: {
            store: new PostgresOutboxStore({ pool, table, clock }),
            publisher: () => Promise.resolve(),
            relay: { enabled: false },
          },
        }),
        ResilienceEndpointsModule.forRoot({
          status: { guards: [OperatorGuard], writable: { guards: [OperatorGuard] } },
        }),
      ],
    }).compile();
    app = await initPlatformApp(createPlatformApp(moduleRef, platform));
    await app.listen(0, '127.0.0.1');
    base = `${await app.getUrl()}/actuator`.replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app.close();
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.end();
  });

  it('keep every read route behind the guards', async () => {
    for (const route of ['', '/circuitbreakers', '/outbox', '/outbox/parked', '/loadshedding', '/faults']) {
      expect([route, (await fetch(`${base}${route}`)).status]).toEqual([route, 403]);
      expect([route, (await fetch(`${base}${route}`, { headers: OPERATOR })).status]).toEqual([route, 200]);
    }
  });

  it.each([
    ['POST', '/outbox/parked/%00/requeue', undefined],
    ['POST', '/outbox/parked/a%00b/requeue', undefined],
    ['POST', '/circuitbreakers/%00', { updateState: 'CLOSE' }],
    ['GET', '/circuitbreakers/%00', undefined],
    ['GET', '/circuitbreakerevents/ps%00p', undefined],
  ])('answer %s %s (a NUL in the id) with 404 problem+json', async (method, route, body) => {
    const answer = await fetch(`${base}${route}`, {
      method,
      headers: body === undefined ? OPERATOR : { ...OPERATOR, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect({ status: answer.status, type: answer.headers.get('content-type') }).toEqual({
      status: 404,
      type: 'application/problem+json; charset=utf-8',
    });
    expect(await answer.json()).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: expect.stringContaining('no '),
      instance: `/actuator${route}`,
    });
  });

  it.each([
    ['POST', '/faults/%00', 400, 'Bad Request', { error: { rate: 1, error: 503 } }],
    ['POST', '/faults/a%00b', 400, 'Bad Request', { latency: { rate: 1, delay: '1s' } }],
    ['PATCH', '/circuitbreakers/%00/config', 404, 'Not Found', { failureRateThreshold: 30 }],
    ['PATCH', '/circuitbreakers/ps%00p/config', 404, 'Not Found', { failureRateThreshold: 30 }],
    ['PATCH', '/%00/psp/config', 404, 'Not Found', { failureRateThreshold: 30 }],
  ])('answer %s %s (a NUL in the id) with %i problem+json', async (method, route, status, title, body) => {
    const answer = await fetch(`${base}${route}`, {
      method,
      headers: { ...OPERATOR, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect({ status: answer.status, type: answer.headers.get('content-type') }).toEqual({
      status,
      type: 'application/problem+json; charset=utf-8',
    });
    expect(await answer.json()).toEqual({
      type: 'about:blank',
      title,
      status,
      detail: expect.any(String),
      instance: `/actuator${route}`,
    });
  });

  it('clear no fault for DELETE /faults/%00: a NUL names no fault, and the faults in force stay', async () => {
    const inject = await fetch(`${base}/faults/psp`, {
      method: 'POST',
      headers: { ...OPERATOR, 'content-type': 'application/json' },
      body: JSON.stringify({ error: { rate: 1, error: 503 } }),
    });
    expect(inject.status).toBe(200);
    try {
      const answer = await fetch(`${base}/faults/%00`, { method: 'DELETE', headers: OPERATOR });
      expect(answer.status).toBe(200);
      const { faults } = (await answer.json()) as { faults: { name: string }[] };
      expect(faults.map((f) => f.name)).toEqual(['psp']);
    } finally {
      await fetch(`${base}/faults`, { method: 'DELETE', headers: OPERATOR });
    }
  });
});
