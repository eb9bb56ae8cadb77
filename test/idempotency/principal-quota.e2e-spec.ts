import { Body, Controller, Post } from '@nestjs/common';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, MemoryIdempotencyStore, PlatformRequest, RESILIENCE_PROBLEMS } from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { json, RunningApp, send, startApp } from './http-kit';

const byUser = (req: PlatformRequest) => req.headers['x-user']?.toString();

@Controller()
class ChargesController {
  runs = 0;

  @Post('pay')
  @Idempotent({ ttl: '1h' })
  pay(@Body() body: { pence: number }) {
    return { charge: ++this.runs, pence: body.pence };
  }
}

describe.each(PLATFORMS)('the memory store bounds the keys each principal holds, on %s', (platform) => {
  let clock: VirtualClock;
  let store: MemoryIdempotencyStore;
  let running: RunningApp;

  const pay = (user: string, key: string) =>
    send(running.url, '/pay', { key, body: { pence: 5 }, headers: { 'x-user': user } });

  beforeEach(async () => {
    clock = new VirtualClock(Date.UTC(2025, 0, 1));
    store = new MemoryIdempotencyStore({ clock, maxKeys: 4, maxKeysPerPrincipal: 3 });
    running = await startApp(
      { clock, idempotency: { store, principal: byUser } },
      { controllers: [ChargesController] },
      { platform },
    );
  });
  afterEach(() => running.close());

  it('answers a principal over its quota 429 with Retry-After until its oldest key expires; another principal still gets a key', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await pay('alice', `a${i}`)).status).toBe(201);
      await clock.advance(10_000);
    }
    const refused = await pay('alice', 'a3');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    // Her first key expires an hour after it was stored, 30 s ago.
    expect(refused.headers.get('retry-after')).toBe('3570');
    expect(json(refused)).toMatchObject({
      type: RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_QUOTA_EXCEEDED.type,
      status: 429,
      name: 'ChargesController.pay',
    });
    expect(running.outcomes.at(-1)?.outcome).toBe('quota_exceeded');
    // Her stored answers still replay.
    expect((await pay('alice', 'a0')).headers.get('idempotent-replayed')).toBe('true');
    expect((await pay('bob', 'b0')).status).toBe(201);
    await clock.advance(3_570_000);
    expect((await pay('alice', 'a3')).status).toBe(201);
  });

  it('answers 503 with Retry-After until the earliest key expires when the whole store is full', async () => {
    for (let i = 0; i < 3; i++) {
      await pay('alice', `a${i}`);
      await clock.advance(10_000);
    }
    expect((await pay('bob', 'b0')).status).toBe(201);
    await clock.advance(10_000);
    const refused = await pay('carol', 'c0');
    expect(refused.status).toBe(503);
    expect(json(refused)).toMatchObject({ type: RESILIENCE_PROBLEMS.IDEMPOTENCY_STORE_UNAVAILABLE.type });
    // Alice's first key, stored 40 s ago, is the first to expire.
    expect(refused.headers.get('retry-after')).toBe('3560');
  });
});
