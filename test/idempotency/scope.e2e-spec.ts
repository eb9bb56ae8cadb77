import { Body, Controller, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Idempotent, PlatformRequest, ResilienceModule } from '../../lib';
import { PRINCIPAL_MISSING, PRINCIPAL_REQUIRED } from '../../lib/features/idempotency/idempotency.messages';
import { PLATFORMS } from '../support/platforms';
import { json, RunningApp, send, startApp } from './http-kit';

const byUser = (req: PlatformRequest) => req.headers['x-user']?.toString();

@Controller()
class ChargesController {
  runs = 0;

  @Post('pay')
  @Idempotent()
  pay(@Body() body: { pence: number }) {
    return { charge: ++this.runs, pence: body.pence };
  }

  @Post('orders/:id/pay')
  @Idempotent()
  payOrder(@Param('id') id: string) {
    return { order: id, charge: ++this.runs };
  }
}

describe.each(PLATFORMS)('@Idempotent key scope: method, matched route and principal, on %s', (platform) => {
  let running: RunningApp;
  let controller: ChargesController;

  beforeEach(async () => {
    running = await startApp(
      { idempotency: { principal: byUser } },
      { controllers: [ChargesController] },
      { platform },
    );
    controller = running.app.get(ChargesController);
  });
  afterEach(() => running.close());

  // Express routes paths case-insensitively and ignores a trailing slash; Fastify, by default, does neither.
  if (platform === 'express') {
    it('shares one key space between /pay, /pay/ and /PAY, which the router sends to one handler', async () => {
      const first = await send(running.url, '/pay', {
        key: 'k-route',
        body: { pence: 5 },
        headers: { 'x-user': 'alice' },
      });
      const slash = await send(running.url, '/pay/', {
        key: 'k-route',
        body: { pence: 5 },
        headers: { 'x-user': 'alice' },
      });
      const upper = await send(running.url, '/PAY', {
        key: 'k-route',
        body: { pence: 5 },
        headers: { 'x-user': 'alice' },
      });
      expect(controller.runs).toBe(1);
      expect(first.status).toBe(201);
      for (const again of [slash, upper]) {
        expect(again).toMatchObject({ status: 201, text: first.text });
        expect(again.headers.get('idempotent-replayed')).toBe('true');
      }
    });
  }

  it('treats two resources of one route template with the same key as a reused key, not a replay', async () => {
    const one = await send(running.url, '/orders/1/pay', { key: 'k-orders', headers: { 'x-user': 'alice' } });
    const two = await send(running.url, '/orders/2/pay', { key: 'k-orders', headers: { 'x-user': 'alice' } });
    const oneAgain = await send(running.url, platform === 'express' ? '/ORDERS/1/pay/' : '/orders/1/pay', {
      key: 'k-orders',
      headers: { 'x-user': 'alice' },
    });
    expect(one.status).toBe(201);
    expect(two.status).toBe(422);
    expect(oneAgain).toMatchObject({ status: 201, text: one.text });
    expect(controller.runs).toBe(1);
  });

  it('never replays one principal’s answer to another who reuses the key', async () => {
    const alice = await send(running.url, '/pay', {
      key: 'k-shared-by-chance',
      body: { pence: 5 },
      headers: { 'x-user': 'alice' },
    });
    const bob = await send(running.url, '/pay', {
      key: 'k-shared-by-chance',
      body: { pence: 5 },
      headers: { 'x-user': 'bob' },
    });
    expect(bob.headers.get('idempotent-replayed')).toBeNull();
    expect(json(alice).charge).toBe(1);
    expect(json(bob).charge).toBe(2);
  });
  it('refuses a request whose principal resolves to nothing (401, naming the option): no replay of another caller’s key', async () => {
    const alice = await send(running.url, '/pay', {
      key: 'k-alice',
      body: { iban: 'GB33BUKB20201555555555' },
      headers: { 'x-user': 'alice' },
    });
    const anonymous = await send(running.url, '/pay', { key: 'k-alice', body: { iban: 'GB33BUKB20201555555555' } });
    const empty = await send(running.url, '/pay', {
      key: 'k-alice',
      body: { iban: 'GB33BUKB20201555555555' },
      headers: { 'x-user': '' },
    });
    expect(alice.status).toBe(201);
    for (const refused of [anonymous, empty]) {
      expect(refused.status).toBe(401);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.headers.get('idempotent-replayed')).toBeNull();
      expect(json(refused)).toMatchObject({
        status: 401,
        type: 'https://resilience4nest.dev/problems/idempotency-principal-missing',
      });
      expect(json(refused).detail).toBe(PRINCIPAL_MISSING('the module option idempotency.principal'));
      expect(refused.text).not.toContain('GB33');
    }
    expect(controller.runs).toBe(1);
  });
});

describe('@Idempotent principal choice', () => {
  @Controller()
  class UnscopedController {
    @Post('pay')
    @Idempotent()
    pay() {
      return { ok: true };
    }
  }

  @Controller()
  class RouteScopedController {
    runs = 0;

    @Post('pay')
    @Idempotent({ principal: byUser })
    pay() {
      return { charge: ++this.runs };
    }

    @Post('public')
    @Idempotent({ principal: 'shared' })
    open() {
      return { charge: ++this.runs };
    }
  }

  it('fails bootstrap for a route without a principal, showing both ways to choose one', async () => {
    const compiled = Test.createTestingModule({
      imports: [ResilienceModule.forRoot({})],
      controllers: [UnscopedController],
    }).compile();
    const boot = compiled.then((moduleRef) => moduleRef.createNestApplication({ logger: false }).init());
    await expect(boot).rejects.toThrow(PRINCIPAL_REQUIRED('UnscopedController.pay'));
    const message = PRINCIPAL_REQUIRED('UnscopedController.pay');
    expect(message).toContain('principal: (req) =>');
    expect(message).toContain("principal: 'shared'");
    expect(message).toContain('idempotency.principal');
  });

  it('takes the principal from the route option, and shares keys on purpose with principal: shared', async () => {
    const running = await startApp({}, { controllers: [RouteScopedController] });
    try {
      const controller = running.app.get(RouteScopedController);
      await send(running.url, '/pay', { key: 'k', headers: { 'x-user': 'alice' } });
      const bob = await send(running.url, '/pay', { key: 'k', headers: { 'x-user': 'bob' } });
      expect(bob.headers.get('idempotent-replayed')).toBeNull();
      expect(controller.runs).toBe(2);
      await send(running.url, '/public', { key: 'k', headers: { 'x-user': 'alice' } });
      const shared = await send(running.url, '/public', { key: 'k', headers: { 'x-user': 'bob' } });
      expect(shared.headers.get('idempotent-replayed')).toBe('true');
      expect(controller.runs).toBe(3);
    } finally {
      await running.close();
    }
  });

  it('accepts principal: shared as the module option', async () => {
    const running = await startApp({ idempotency: { principal: 'shared' } }, { controllers: [UnscopedController] });
    try {
      const first = await send(running.url, '/pay', { key: 'k', headers: { 'x-user': 'alice' } });
      const again = await send(running.url, '/pay', { key: 'k', headers: { 'x-user': 'bob' } });
      expect(first.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      await running.close();
    }
  });
});
