import { Body, Controller, Get, HttpException, Injectable, Logger, Post, Res } from '@nestjs/common';
import { defer, Observable } from 'rxjs';
import { VirtualClock } from '../../lib/kernel/clock';
import {
  downstreamIdempotencyKey,
  Idempotent,
  IdempotencyReconciler,
  PlatformRequest,
  RESILIENCE_PROBLEMS,
  StaleIdempotencyKey,
} from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';
import { Gate, json, RunningApp, ScriptedHandler, send, sendKeyLines, startApp } from './http-kit';
import { FaultyStore, memoryTarget, postgresTarget, redisTarget } from './store-targets';

const START = Date.UTC(2025, 0, 1);
const LEASE = 30_000;
const TTL = 24 * 60 * 60 * 1000;

/** What the handlers use of the response: Express's and Fastify's alike. */
interface Reply {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

interface Effect {
  readonly route: string;
  readonly id: string;
  readonly amount: number;
}

/** A refusal that leaves nothing done: its key is freed for a retry. */
class CardHeld extends HttpException {
  constructor() {
    super({ message: 'card held, try again' }, 409);
  }
}

/** The business side: every effect the handlers had, and the knobs tests turn. */
@Injectable()
class Ledger extends ScriptedHandler {
  readonly effects: Effect[] = [];

  async effect(route: string, amount: number): Promise<Effect> {
    const effect = { route, id: `${route}_${this.effects.length + 1}`, amount };
    this.effects.push(effect);
    await this.proceed();
    return effect;
  }

  count(route = 'pay'): number {
    return this.effects.filter((e) => e.route === route).length;
  }
}

@Controller()
class PaymentsController {
  constructor(private readonly ledger: Ledger) {}

  @Post('payments')
  @Idempotent()
  async pay(@Body() body: { amount: number }, @Res({ passthrough: true }) res: Reply) {
    const { id, amount } = await this.ledger.effect('pay', body.amount);
    res.header('set-cookie', `session=s-${id}; Path=/`);
    res.header('location', `/payments/${id}`);
    return { id, amount, downstream: downstreamIdempotencyKey() };
  }

  @Idempotent()
  @Post('refunds')
  async refund(@Body() body: { amount: number }) {
    const { id, amount } = await this.ledger.effect('refund', body.amount);
    return { id, amount };
  }

  @Post('declines')
  @Idempotent()
  async decline(@Body() body: { amount: number }) {
    await this.ledger.effect('decline', body.amount);
    throw new HttpException({ message: 'card declined' }, 402);
  }

  @Post('orders')
  @Idempotent({ onStatus: (status) => (status === 202 ? 'keep' : status === 409 ? 'release' : 'store') })
  async order(@Body() body: { amount: number; answer: number }, @Res({ passthrough: true }) res: Reply) {
    await this.ledger.effect('order', body.amount);
    res.status(body.answer);
    return { answer: body.answer };
  }

  @Post('tips')
  @Idempotent({ required: false })
  async tip(@Body() body: { amount: number }) {
    return this.ledger.effect('tip', body.amount);
  }

  @Post('holds')
  @Idempotent({ releaseOn: [CardHeld] })
  async hold(@Body() body: { amount: number }) {
    await this.ledger.effect('hold', body.amount);
    throw new CardHeld();
  }

  @Post('audits')
  @Idempotent({
    onStatus: () => {
      throw new Error('no verdict');
    },
  })
  async audit(@Body() body: { amount: number }) {
    return this.ledger.effect('audit', body.amount);
  }

  @Post('streams')
  @Idempotent()
  stream(@Body() body: { amount: number }): Observable<never> {
    return defer(async () => {
      await this.ledger.effect('stream', body.amount);
      throw new HttpException({ message: 'amount out of range' }, 422);
    });
  }

  @Get('payments')
  @Idempotent()
  async list() {
    await this.ledger.effect('list', 0);
    return { count: this.ledger.effects.length };
  }
}

const targets = [memoryTarget(), postgresTarget('http'), redisTarget('http')];

describe.each(
  PLATFORMS.flatMap((platform) =>
    targets.map((target) => ({ platform, target, name: `${target.name} on ${platform}` })),
  ),
)('@Idempotent over HTTP: $name', ({ platform, target }) => {
  const url = target.server === undefined ? '' : serverOrSkip(target.server);
  if (url === undefined) return;

  let clock: VirtualClock;
  let store: FaultyStore;
  let running: RunningApp;
  let ledger: Ledger;
  let reconciler: IdempotencyReconciler | undefined;
  const staleSeen: StaleIdempotencyKey[] = [];
  let base: string;

  beforeAll(() => target.setup(url));
  afterAll(() => target.teardown());
  beforeEach(async () => {
    clock = new VirtualClock(START);
    store = new FaultyStore(target.create(clock));
    reconciler = undefined;
    staleSeen.length = 0;
    running = await startApp(
      {
        clock,
        idempotency: {
          store: store,
          lease: LEASE,
          ttl: TTL,
          // Requests without x-user are one test client's.
          principal: (req: PlatformRequest) => req.headers['x-user']?.toString() ?? 'tester',
          reconciler: (stale) => {
            staleSeen.push(stale);
            return reconciler === undefined ? { action: 'wait' } : reconciler(stale);
          },
        },
      },
      { controllers: [PaymentsController], providers: [Ledger] },
      { platform },
    );
    ledger = running.app.get(Ledger);
    base = running.url;
  });
  afterEach(() => running.close());

  const pay = (key: string | undefined, amount = 999, extra: Record<string, string> = {}) =>
    send(base, '/payments', { key, body: { amount }, headers: extra });
  const outcomes = () => running.outcomes.map((o) => o.outcome);

  describe('concurrent duplicates', () => {
    it('runs the handler once for 50 concurrent identical requests; the rest get 409 or the replay', async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => pay('k-50')));
      expect(ledger.count()).toBe(1);
      const fresh = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
      const replays = answers.filter((a) => a.headers.get('idempotent-replayed') === 'true');
      const busy = answers.filter((a) => a.status === 409);
      expect(fresh).toHaveLength(1);
      expect(replays.length + busy.length).toBe(49);
      for (const replay of replays) expect(replay).toMatchObject({ status: 201, text: fresh[0].text });
      for (const refused of busy) expect(json(refused).type).toBe(RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_IN_PROGRESS.type);
    });

    it('answers 409 with Retry-After to all 49 while the first runs, then replays to a latecomer', async () => {
      const gate = new Gate();
      ledger.gates.push(gate);
      const first = pay('k-held');
      await ledger.watch.until(() => ledger.count() === 1);
      const others = await Promise.all(Array.from({ length: 49 }, () => pay('k-held')));
      expect(others.map((a) => a.status)).toEqual(Array(49).fill(409));
      expect(others[0].headers.get('retry-after')).toBe(String(LEASE / 1000));
      expect(others[0].headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      gate.open();
      const winner = await first;
      expect(winner.status).toBe(201);
      const late = await pay('k-held');
      expect(late).toMatchObject({ status: 201, text: winner.text });
      expect(late.headers.get('idempotent-replayed')).toBe('true');
      expect(ledger.count()).toBe(1);
    });
  });

  describe('replay', () => {
    it('replays status, body bytes, Location, Content-Type and ETag with Idempotent-Replayed, never Set-Cookie, with no new effect', async () => {
      const first = await pay('k-replay');
      expect(first.status).toBe(201);
      expect(first.headers.get('set-cookie')).toMatch(/^session=s-pay_1/);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const again = await pay('k-replay');
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      for (const header of ['location', 'content-type', 'etag'])
        expect(again.headers.get(header)).toBe(first.headers.get(header));
      expect(again.headers.get('location')).toBe('/payments/pay_1');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('set-cookie')).toBeNull();
      expect(ledger.count()).toBe(1);
      expect(outcomes()).toEqual(['executed', 'replayed']);
    });

    it('replays a 4xx the handler threw', async () => {
      const first = await send(base, '/declines', { key: 'k-decline', body: { amount: 5 } });
      expect(first.status).toBe(402);
      const again = await send(base, '/declines', { key: 'k-decline', body: { amount: 5 } });
      expect(again).toMatchObject({ status: 402, text: first.text });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(ledger.count('decline')).toBe(1);
    });

    it('replays a body with reordered JSON keys at every level', async () => {
      const first = await send(base, '/payments', {
        key: 'k-order',
        body: '{"amount":999,"meta":{"a":1,"b":[{"x":1,"y":2}]}}',
      });
      const again = await send(base, '/payments', {
        key: 'k-order',
        body: '{"meta":{"b":[{"y":2,"x":1}],"a":1},"amount":999}',
      });
      expect(first.status).toBe(201);
      expect(again).toMatchObject({ status: 201, text: first.text });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(ledger.count()).toBe(1);
    });

    it('accepts the quoted string form as the same key', async () => {
      const first = await pay('abc');
      const again = await pay('"abc"');
      expect(again).toMatchObject({ status: 201, text: first.text });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    });
  });

  describe('onStatus', () => {
    it('keeps a key whose answer it calls unknown (202 pending) and releases one it calls harmless (409)', async () => {
      const order = (key: string, answer: number) => send(base, '/orders', { key, body: { amount: 1, answer } });
      expect((await order('k-pending', 202)).status).toBe(202);
      expect((await order('k-pending', 202)).status).toBe(409);
      expect((await order('k-conflict', 409)).status).toBe(409);
      expect((await order('k-conflict', 409)).status).toBe(409);
      expect((await order('k-created', 201)).status).toBe(201);
      expect((await order('k-created', 201)).headers.get('idempotent-replayed')).toBe('true');
      expect(ledger.count('order')).toBe(4);
      expect(outcomes()).toEqual(['kept_unknown', 'in_progress', 'released', 'released', 'executed', 'replayed']);
    });
  });

  describe('releaseOn', () => {
    it('frees the key after an error it names, so a retry runs', async () => {
      const hold = () => send(base, '/holds', { key: 'k-held', body: { amount: 1 } });
      expect((await hold()).status).toBe(409);
      expect((await hold()).status).toBe(409);
      expect(ledger.count('hold')).toBe(2);
      expect(outcomes()).toEqual(['released', 'released']);
    });

    it('keeps the key claimed when it cannot be freed, reporting the store error', async () => {
      store.failRelease = true;
      expect((await send(base, '/holds', { key: 'k-held-down', body: { amount: 1 } })).status).toBe(409);
      expect(running.outcomes.at(-1)?.outcome).toBe('kept_unknown');
      expect(String((running.outcomes.at(-1)?.error as Error).message)).toContain('release failed');
    });
  });

  describe('onStatus that throws', () => {
    it('keeps the key and says why', async () => {
      const warnings: string[] = [];
      const spy = jest
        .spyOn(Logger.prototype, 'warn')
        .mockImplementation((m: unknown) => void warnings.push(String(m)));
      try {
        const audit = () => send(base, '/audits', { key: 'k-audit', body: { amount: 1 } });
        expect((await audit()).status).toBe(201);
        expect((await audit()).status).toBe(409);
        expect(ledger.count('audit')).toBe(1);
        expect(warnings).toEqual([expect.stringContaining("'onStatus' threw for status 201 (no verdict)")]);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('an Observable route', () => {
    it('stores the error answer it ended with and replays it', async () => {
      const stream = () => send(base, '/streams', { key: 'k-stream', body: { amount: 1 } });
      expect((await stream()).status).toBe(422);
      const again = await stream();
      expect(again.status).toBe(422);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(ledger.count('stream')).toBe(1);
    });
  });

  describe('fingerprint', () => {
    it('answers 422 to a changed body while the first request is in flight, before 409, and after it completed', async () => {
      const gate = new Gate();
      ledger.gates.push(gate);
      const first = pay('k-changed', 999);
      await ledger.watch.until(() => ledger.count() === 1);
      const busy = await pay('k-changed', 999);
      expect(busy.status).toBe(409);
      const changed = await pay('k-changed', 1);
      expect(changed.status).toBe(422);
      expect(changed.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(json(changed)).toMatchObject({
        type: RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_REUSE.type,
        status: 422,
        instance: '/payments',
      });
      gate.open();
      expect((await first).status).toBe(201);
      expect((await pay('k-changed', 1)).status).toBe(422);
      expect(ledger.count()).toBe(1);
      expect(outcomes()).toEqual(['in_progress', 'key_reuse', 'executed', 'key_reuse']);
    });
  });

  describe('scope', () => {
    it('keeps the same key of another principal independent', async () => {
      const alice = await pay('shared', 999, { 'x-user': 'alice' });
      const bob = await pay('shared', 999, { 'x-user': 'bob' });
      expect([alice.status, bob.status]).toEqual([201, 201]);
      expect(bob.headers.get('idempotent-replayed')).toBeNull();
      expect(json(bob).id).not.toBe(json(alice).id);
      expect(json(bob).downstream).not.toBe(json(alice).downstream);
      expect(ledger.count()).toBe(2);
    });

    it('keeps the same key on another route independent', async () => {
      const payment = await pay('shared');
      const refund = await send(base, '/refunds', { key: 'shared', body: { amount: 999 } });
      expect([payment.status, refund.status]).toEqual([201, 201]);
      expect(refund.headers.get('idempotent-replayed')).toBeNull();
      expect(ledger.effects.map((e) => e.route)).toEqual(['pay', 'refund']);
    });
  });

  describe('bad keys', () => {
    it.each([
      ['missing', undefined, /required on POST \/payments/],
      ['empty', '', /is empty/],
      ['empty quoted', '""', /is empty/],
      ['256 characters', 'k'.repeat(256), /256 characters long, more than 255/],
      ['a control character (tab)', 'ab\tcd', /printable ASCII/],
      ['non-ASCII', 'clé', /printable ASCII/],
      ['a broken quoted string', '"abc', /quoted key/],
    ])('answers 400 problem+json to a key that is %s, with no effect', async (_, key, detail) => {
      const answer = await pay(key);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(json(answer)).toMatchObject({
        type: RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_MISSING.type,
        status: 400,
        name: 'PaymentsController.pay',
      });
      expect(json(answer).detail).toMatch(detail);
      expect(ledger.count()).toBe(0);
      expect(outcomes()).toEqual(['missing_key']);
    });

    it('answers 400 to a key header sent twice, with no effect', async () => {
      const answer = await sendKeyLines(base, '/payments', ['k-one', 'k-two'], { amount: 1 });
      expect(answer.status).toBe(400);
      expect(json(answer)).toMatchObject({
        type: RESILIENCE_PROBLEMS.IDEMPOTENCY_KEY_MISSING.type,
        detail: expect.stringMatching(/sent more than once/),
      });
      expect(ledger.count()).toBe(0);
    });

    it('accepts 255 characters', async () => {
      expect((await pay('k'.repeat(255))).status).toBe(201);
    });

    it('runs a route whose key is optional without protection when it is left out', async () => {
      const one = await send(base, '/tips', { body: { amount: 1 } });
      const two = await send(base, '/tips', { body: { amount: 1 } });
      expect([one.status, two.status]).toEqual([201, 201]);
      expect(ledger.count('tip')).toBe(2);
      expect((await send(base, '/tips', { key: '', body: { amount: 1 } })).status).toBe(400);
      expect(outcomes()).toEqual(['bypassed', 'bypassed', 'missing_key']);
    });
  });

  it('ignores the header on GET', async () => {
    const one = await send(base, '/payments', { method: 'GET', key: 'k-get' });
    const two = await send(base, '/payments', { method: 'GET', key: 'k-get' });
    const three = await send(base, '/payments', { method: 'GET' });
    expect([one.status, two.status, three.status]).toEqual([200, 200, 200]);
    expect(two.headers.get('idempotent-replayed')).toBeNull();
    expect(ledger.count('list')).toBe(3);
    expect(outcomes()).toEqual([]);
  });

  describe('lease and TTL on the injected clock', () => {
    it('keeps an unknown outcome (500) claimed: 409 until the lease ends, then the reconciler decides, long before the TTL', async () => {
      ledger.failNext = new Error('processor timed out');
      expect((await pay('k-stuck')).status).toBe(500);
      expect(outcomes()).toEqual(['kept_unknown']);
      await clock.advance(LEASE - 1);
      const busy = await pay('k-stuck');
      expect(busy.status).toBe(409);
      expect(busy.headers.get('retry-after')).toBe('1');
      expect(staleSeen).toHaveLength(0);
      await clock.advance(1);
      reconciler = (stale) => ({
        action: 'complete',
        status: 201,
        body: { id: 'pay_1', amount: 999, reconciled: stale.downstreamKey() },
      });
      const resolved = await pay('k-stuck');
      expect(resolved.status).toBe(201);
      expect(resolved.headers.get('idempotent-replayed')).toBe('true');
      expect(resolved.headers.get('content-type')).toMatch(/^application\/json/);
      expect(staleSeen).toHaveLength(1);
      expect(staleSeen[0]).toMatchObject({
        target: 'PaymentsController.pay',
        transport: 'http',
        key: 'k-stuck',
        record: { state: 'in_progress', createdAt: START },
      });
      expect(json(resolved).reconciled).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      const replay = await pay('k-stuck');
      expect(replay).toMatchObject({ status: 201, text: resolved.text });
      expect(ledger.count()).toBe(1);
      expect(outcomes()).toEqual(['kept_unknown', 'in_progress', 'reconciled', 'replayed']);
    });

    it('hands the reconciler the downstream key the failed attempt used', async () => {
      let used = '';
      ledger.failNext = new Error('reply lost');
      const spy = ledger.effect.bind(ledger);
      ledger.effect = async (route, amount) => {
        used = downstreamIdempotencyKey();
        return spy(route, amount);
      };
      await pay('k-downstream');
      await clock.advance(LEASE);
      reconciler = (stale) => ({ action: 'complete', status: 201, body: { downstream: stale.downstreamKey() } });
      const resolved = await pay('k-downstream');
      expect(json(resolved).downstream).toBe(used);
    });

    it('runs the handler again when the reconciler finds no effect, with the same downstream key', async () => {
      ledger.failNext = new Error('crashed before charging');
      await pay('k-rerun');
      await clock.advance(LEASE);
      reconciler = () => ({ action: 'run' });
      const rerun = await pay('k-rerun');
      expect(rerun.status).toBe(201);
      expect(rerun.headers.get('idempotent-replayed')).toBeNull();
      expect(ledger.count()).toBe(2);
      expect(json(rerun).downstream).toBe(staleSeen[0].downstreamKey());
    });

    it("keeps a running handler's lease renewed past the lease, so duplicates stay 409 and nobody reconciles", async () => {
      const gate = new Gate();
      ledger.gates.push(gate);
      const first = pay('k-long');
      await ledger.watch.until(() => ledger.count() === 1);
      for (let i = 1; i <= 6; i++) {
        await clock.advance(LEASE / 3);
        await store.watch.until(() => store.renewals === i);
      }
      expect((await pay('k-long')).status).toBe(409);
      expect(staleSeen).toHaveLength(0);
      gate.open();
      expect((await first).status).toBe(201);
    });

    it('replays until the TTL runs out, then treats the key as new', async () => {
      const first = await pay('k-ttl');
      await clock.advance(TTL - 1);
      expect((await pay('k-ttl')).text).toBe(first.text);
      await clock.advance(1);
      const after = await pay('k-ttl');
      expect(after.status).toBe(201);
      expect(after.headers.get('idempotent-replayed')).toBeNull();
      expect(ledger.count()).toBe(2);
    });
  });

  describe('owner check', () => {
    it("lets A's late completion, after B took the key over, change nothing", async () => {
      store.failRenew = true;
      const gateA = new Gate();
      ledger.gates.push(gateA);
      const a = pay('k-owner');
      await ledger.watch.until(() => ledger.count() === 1);
      await clock.advance(LEASE);
      reconciler = () => ({ action: 'run' });
      const b = await pay('k-owner');
      expect(b.status).toBe(201);
      expect(json(b).id).toBe('pay_2');
      gateA.open();
      const lateA = await a;
      expect(json(lateA).id).toBe('pay_1');
      expect(store.completions.map((c) => c.stored)).toEqual([true, false]);
      const c = await pay('k-owner');
      expect(c).toMatchObject({ status: 201, text: b.text });
      expect(outcomes()).toEqual(['executed', 'kept_unknown', 'replayed']);
    });
  });

  describe('store failure on completion', () => {
    it('gives the answer, keeps the key claimed and never runs the handler again', async () => {
      store.failComplete = true;
      const first = await pay('k-store-down');
      expect(first.status).toBe(201);
      expect(outcomes()).toEqual(['kept_unknown']);
      store.failComplete = false;
      expect((await pay('k-store-down')).status).toBe(409);
      await clock.advance(LEASE);
      reconciler = () => ({ action: 'complete', status: 201, body: { recovered: true } });
      expect(json(await pay('k-store-down'))).toEqual({ recovered: true });
      expect(ledger.count()).toBe(1);
    });
  });
});
