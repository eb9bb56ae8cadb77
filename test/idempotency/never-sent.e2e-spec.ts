import { Body, Controller, Injectable, Post } from '@nestjs/common';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, RESILIENCE_PROBLEMS, Retry } from '../../lib';
import { BODY_NOT_PARSED } from '../../lib/features/idempotency/idempotency.messages';
import { freePort } from '../support/wait';
import { json, RunningApp, send, startApp } from './http-kit';

/** A provider's outcome-unknown answer: the request reached it. */
class ProviderUnavailable extends Error {
  readonly status = 503;
}

/** What one call to the provider does, in order; `refused` dials a closed port (a real ECONNREFUSED). */
type Step = 'refused' | 'unknown' | 'ok';

@Injectable()
class Provider {
  script: Step[] = [];
  closedPort = 0;
  charges = 0;

  async charge(): Promise<number> {
    const step = this.script.shift() ?? 'ok';
    if (step === 'refused') await fetch(`http://127.0.0.1:${this.closedPort}/charge`, { method: 'POST' });
    if (step === 'unknown') throw new ProviderUnavailable('provider answered 503');
    return ++this.charges;
  }
}

@Controller()
class PaymentsController {
  constructor(private readonly provider: Provider) {}

  @Post('pay')
  @Idempotent()
  async pay(@Body() body: { pence: number }) {
    return { charge: await this.provider.charge(), pence: body.pence };
  }

  @Post('pay-with-retry')
  @Idempotent()
  @Retry('provider')
  async payWithRetry(@Body() body: { pence: number }) {
    return { charge: await this.provider.charge(), pence: body.pence };
  }
}

describe('@Idempotent after errors that prove the request never left', () => {
  let running: RunningApp;
  let provider: Provider;
  let clock: VirtualClock;

  beforeEach(async () => {
    clock = new VirtualClock();
    running = await startApp(
      {
        clock,
        retry: { instances: { provider: { maxAttempts: 2, waitDuration: 0, jitter: 'none' } } },
        idempotency: { principal: 'shared' },
      },
      { controllers: [PaymentsController], providers: [Provider] },
    );
    provider = running.app.get(Provider);
    provider.closedPort = await freePort();
  });
  afterEach(() => running.close());

  it('releases the key after a refused connection, so the retry with the same key runs at once', async () => {
    provider.script = ['refused'];
    const refused = await send(running.url, '/pay', { key: 'k-refused', body: { pence: 5 } });
    expect(refused.status).toBe(500);
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['released']);
    const retry = await send(running.url, '/pay', { key: 'k-refused', body: { pence: 5 } });
    expect(retry.status).toBe(201);
    expect(provider.charges).toBe(1);
  });

  it('keeps the key when an earlier attempt reached the provider and only the last connection was refused', async () => {
    provider.script = ['unknown', 'refused'];
    const answer = await send(running.url, '/pay-with-retry', { key: 'k-mixed', body: { pence: 5 } });
    expect(answer.status).toBe(500);
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['kept_unknown']);
    const retry = await send(running.url, '/pay-with-retry', { key: 'k-mixed', body: { pence: 5 } });
    expect(retry.status).toBe(409);
    expect(provider.charges).toBe(0);
  });

  it('answers a stale key without a reconciler with an honest "outcome unknown": its own type, 500, no Retry-After', async () => {
    provider.script = ['unknown'];
    const unknown = await send(running.url, '/pay', { key: 'k-stale', body: { pence: 5 } });
    expect(unknown.status).toBe(500);
    // The lease of the attempt that stopped runs out: the key is stale, and nothing can resolve it.
    await clock.advance(30_000);
    const stale = await send(running.url, '/pay', { key: 'k-stale', body: { pence: 5 } });
    expect(stale.status).toBe(500);
    expect(stale.headers.get('retry-after')).toBeNull();
    expect(json(stale)).toMatchObject({ type: RESILIENCE_PROBLEMS.IDEMPOTENCY_OUTCOME_UNKNOWN.type, status: 500 });
    expect(json(stale).detail).toContain('outcome is unknown');
    expect(provider.charges).toBe(0);
  });
});

@Controller()
class UploadsController {
  runs = 0;

  @Post('upload')
  @Idempotent()
  upload() {
    return { upload: ++this.runs };
  }
}

describe('@Idempotent on a body that is not parsed when it runs', () => {
  let running: RunningApp;

  beforeEach(async () => {
    running = await startApp({ idempotency: { principal: 'shared' } }, { controllers: [UploadsController] });
  });
  afterEach(() => running.close());

  it('refuses the request with a message saying what to do, never replaying one body for another', async () => {
    const first = await send(running.url, '/upload', {
      key: 'k-upload',
      body: 'first file',
      headers: { 'content-type': 'text/plain' },
    });
    const second = await send(running.url, '/upload', {
      key: 'k-upload',
      body: 'another file',
      headers: { 'content-type': 'text/plain' },
    });
    for (const refused of [first, second]) {
      expect(refused.status).toBe(415);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.headers.get('idempotent-replayed')).toBeNull();
      expect(json(refused).detail).toBe(BODY_NOT_PARSED('UploadsController.upload', 'text/plain'));
    }
    expect(running.app.get(UploadsController).runs).toBe(0);
  });
});
