import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import request from 'supertest';
import {
  Outbox,
  PostgresOutboxStore,
  ResilienceEndpointsModule,
  ResilienceHealthIndicator,
  ResilienceModule,
  VirtualClock,
} from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { inTransaction, RecordingPublisher, settle, tableName } from './outbox-kit';

const START = Date.UTC(2026, 0, 1);

/** Lets a request through when it says it is an operator. */
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

describe('outbox metrics, health, status and admin endpoints', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let pool: Pool;
  let table: string;
  let app: INestApplication;
  let clock: VirtualClock;
  let registry: Registry;
  let publisher: RecordingPublisher;
  let outbox: Outbox;

  beforeAll(async () => {
    pool = new Pool({ connectionString: url, max: 6 });
    table = tableName();
    clock = new VirtualClock(START);
    registry = new Registry();
    publisher = new RecordingPublisher();
    publisher.failing = (e) => e.topic === 'poison';
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: { registry },
          retry: { instances: { outbox: { maxAttempts: 1 } } },
          outbox: {
            store: new PostgresOutboxStore({ pool, table, clock }),
            publisher: publisher.publish,
            relay: { notify: false, pollInterval: 1000, lease: 10_000, maxAttempts: 2 },
          },
        }),
        ResilienceEndpointsModule.forRoot({
          metrics: true,
          status: { public: true, writable: { guards: [OperatorGuard] } },
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    outbox = app.get(Outbox);
  });
  afterAll(async () => {
    await app.close();
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.end();
  });

  const http = () => request(app.getHttpServer());

  it('reports the backlog, the lag, publish results and parked events, and requeues behind the guard', async () => {
    const health = app.get(ResilienceHealthIndicator);
    // The relay's passes are driven by hand below, so virtual time moving does not start one.
    await outbox.relay!.stop();
    const poison = await inTransaction(pool, (tx) => outbox.add('poison', { n: 1 }, { tx }));
    for (const n of [1, 2]) await inTransaction(pool, (tx) => outbox.add('order.created', { n }, { tx }));
    await clock.advance(5000);
    await outbox.stats();
    // No pass has run since the events were added: 3 pending, 5 s behind.
    expect(await health.checkOutbox({ maxLag: '10s' })).toEqual({
      outbox: { status: 'up', pending: 3, parked: 0, lagMs: 5000, maxLagMs: 10_000 },
    });
    expect(await health.checkOutbox({ maxLag: 4000 })).toEqual({
      outbox: expect.objectContaining({ status: 'down', lagMs: 5000, reason: expect.stringContaining('5000 ms old') }),
    });

    // Two passes: the good events go out, the poison one fails twice and is parked.
    await clock.advance(1000);
    await outbox.relay?.runOnce();
    await clock.advance(1000);
    await outbox.relay?.runOnce();
    await outbox.stats();
    expect(publisher.events.map((e) => e.topic)).toEqual(['order.created', 'order.created']);

    const metrics = await registry.metrics();
    expect(metrics).toContain('resilience4nest_outbox_pending 0');
    expect(metrics).toContain('resilience4nest_outbox_oldest_pending_age_seconds 0');
    expect(metrics).toContain('resilience4nest_outbox_parked 1');
    expect(metrics).toContain('resilience4nest_outbox_published_total{topic="order.created",result="published"} 2');
    expect(metrics).toContain('resilience4nest_outbox_published_total{topic="poison",result="failed"} 1');
    expect(metrics).toContain('resilience4nest_outbox_published_total{topic="poison",result="parked"} 1');
    expect(await health.checkOutbox({ maxLag: '10s', maxParked: 0 })).toEqual({
      outbox: expect.objectContaining({ status: 'down', parked: 1, reason: expect.stringContaining('parked') }),
    });
    await expect(health.checkOutbox({ maxLag: 'soon' })).rejects.toThrow(/option 'maxLag' must be a duration/);

    const status = await http().get('/actuator/outbox').expect(200);
    expect(status.body).toEqual({
      outbox: {
        pending: 0,
        parked: 1,
        oldestPendingAgeSeconds: 0,
        relay: true,
        published: { 'order.created': { published: 2 }, poison: { failed: 1, parked: 1 } },
      },
    });
    const parked = await http().get('/actuator/outbox/parked').expect(200);
    // No payload and no headers: the status endpoints carry no request data.
    expect(parked.body).toEqual({
      parked: [
        {
          id: poison,
          topic: 'poison',
          key: null,
          state: 'parked',
          attempts: 2,
          lastError: 'PublishFailed: poison',
          occurredAt: START,
        },
      ],
    });
    // The generic routes still work beside the outbox's.
    await http().get('/actuator/circuitbreakers').expect(200);

    await http().post(`/actuator/outbox/parked/${poison}/requeue`).expect(403);
    await http().post(`/actuator/outbox/parked/nope/requeue`).set('x-operator', 'yes').expect(404);
    publisher.failing = () => false;
    const requeued = await http()
      .post(`/actuator/outbox/parked/${poison}/requeue`)
      .set('x-operator', 'yes')
      .expect(200);
    expect(requeued.body).toEqual({ requeued: poison });
    await settle(clock, outbox.relay!.runOnce());
    expect(publisher.events.map((e) => e.topic)).toEqual(['order.created', 'order.created', 'poison']);
    expect((await http().get('/actuator/outbox/parked').expect(200)).body).toEqual({ parked: [] });
  });

  it('replays sent events behind the guard, and refuses a bad body as problem+json', async () => {
    await outbox.relay!.stop();
    const ids: string[] = [];
    for (const n of [1, 2]) ids.push(await inTransaction(pool, (tx) => outbox.add('replayed', { n }, { tx })));
    await settle(clock, outbox.relay!.runOnce());
    const before = publisher.events.length;

    await http().post('/actuator/outbox/replay').send({ topic: 'replayed' }).expect(403);
    const refused = await http()
      .post('/actuator/outbox/replay')
      .set('x-operator', 'yes')
      .send({ ids: 'all' })
      .expect(400)
      .expect('content-type', /application\/problem\+json/);
    expect(refused.body).toMatchObject({
      status: 400,
      title: 'Bad Request',
      detail: expect.stringMatching(/option 'ids' must be a non-empty array of non-empty strings, got "all"/),
      instance: '/actuator/outbox/replay',
    });
    await http().post('/actuator/outbox/replay').set('x-operator', 'yes').send({}).expect(400);

    const replayed = await http()
      .post('/actuator/outbox/replay')
      .set('x-operator', 'yes')
      .send({ topic: 'replayed', since: new Date(START).toISOString() })
      .expect(200);
    expect(replayed.body).toEqual({ replayed: 2 });
    await settle(clock, outbox.relay!.runOnce());
    expect(publisher.events.slice(before).map((e) => e.id)).toEqual(ids);
  });
});
