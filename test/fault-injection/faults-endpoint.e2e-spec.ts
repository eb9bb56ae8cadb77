import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import request from 'supertest';
import { ResilienceEndpointsModule, ResilienceModuleOptions } from '../../lib';
import { FAULTS_DISABLED } from '../../lib/features/fault-injection/fault-injection.messages';
import { bootApp, Shop } from '../observability/kit';
import { VirtualClock } from '../../lib';

class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-operator'] === 'yes';
  }
}

async function boot(
  options: ResilienceModuleOptions,
): Promise<{ app: INestApplication; clock: VirtualClock; shop: Shop }> {
  return bootApp(
    { metrics: false, logging: false, ...options },
    {
      imports: [ResilienceEndpointsModule.forRoot({ status: { public: true, writable: { guards: [OperatorGuard] } } })],
    },
  );
}

describe('the guarded fault endpoints', () => {
  it('inject, list and clear faults at run time, behind the writable guards', async () => {
    const { app, clock, shop } = await boot({ faultInjection: { enabled: true } });
    const http = () => request(app.getHttpServer());
    await http()
      .post('/actuator/faults/psp')
      .send({ error: { rate: 1, error: 503 } })
      .expect(403);

    const injected = await http()
      .post('/actuator/faults/psp')
      .set('x-operator', 'yes')
      .send({ error: { rate: 1, error: 503 }, for: '1m' })
      .expect(200);
    expect(injected.body).toEqual({
      enabled: true,
      faults: [{ name: 'psp', error: { rate: 1, error: 503 }, remainingMs: 60_000 }],
    });
    // The breaker named psp now sees injected 503s.
    const charged = shop.charge(10, false).catch((e: unknown) => e);
    await clock.advance(10);
    expect(await charged).toMatchObject({ status: 503 });

    const bad = await http()
      .post('/actuator/faults/psp')
      .set('x-operator', 'yes')
      .send({ latency: { rate: 1 } })
      .expect(400);
    expect(bad.body.detail).toContain("'latency'");
    await http().delete('/actuator/faults/psp').set('x-operator', 'yes').expect(200, { enabled: true, faults: [] });
    await http().get('/actuator/faults').set('x-operator', 'yes').expect(200, { enabled: true, faults: [] });
    await app.close();
  });

  it('serve every injection on the events feed, oldest first, and by instance name', async () => {
    const { app, clock, shop } = await boot({
      faultInjection: { enabled: true, instances: { psp: { latency: { rate: 1, duration: '40ms' } } } },
    });
    const http = () => request(app.getHttpServer());
    const slow = shop.charge(10, false);
    await clock.advance(50);
    expect(await slow).toBe('charged');
    await http()
      .post('/actuator/faults/psp')
      .set('x-operator', 'yes')
      .send({ error: { rate: 1, error: 503 } })
      .expect(200);
    const failed = shop.charge(10, false).catch((e: unknown) => e);
    await clock.advance(10);
    expect(await failed).toMatchObject({ status: 503 });

    const expected = [
      expect.objectContaining({ type: 'FAULT_INJECTED', name: 'psp', kind: 'latency', durationMs: 40 }),
      expect.objectContaining({ type: 'FAULT_INJECTED', name: 'psp', kind: 'error' }),
    ];
    const all = (await http().get('/actuator/faultevents').expect(200)).body.faultEvents;
    expect(all).toEqual(expected);
    expect(new Date(all[0].creationTime).toISOString()).toBe(all[0].creationTime);
    expect(all[1].durationMs).toBeUndefined();
    expect((await http().get('/actuator/faultevents/psp').expect(200)).body.faultEvents).toEqual(expected);
    expect((await http().get('/actuator/faultevents/inventory').expect(200)).body.faultEvents).toEqual([]);
    await app.close();
  });

  it('answer 409 when fault injection is off', async () => {
    const { app } = await boot({});
    const { body } = await request(app.getHttpServer())
      .post('/actuator/faults/psp')
      .set('x-operator', 'yes')
      .send({ error: { rate: 1, error: 503 } })
      .expect(409);
    expect(body.detail).toBe(FAULTS_DISABLED('psp'));
    await app.close();
  });
});
