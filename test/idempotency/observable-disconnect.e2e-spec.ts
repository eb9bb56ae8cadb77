import { Body, Controller, Header, HttpCode, INestApplication, Post } from '@nestjs/common';
import { request as httpRequest } from 'node:http';
import { Observable } from 'rxjs';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, IdempotencyRegistry } from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';
import { json, RunningApp, send, startApp, Watch } from './http-kit';
import { memoryTarget, redisTarget } from './store-targets';

const WORK_MS = 1000;

/** An Observable route whose work takes WORK_MS on the virtual clock and can be told apart from its teardown. */
@Controller()
class StockController {
  subscriptions = 0;
  /** Teardowns that came before the work ended: the work was cancelled. */
  cancellations = 0;
  completions = 0;
  closes = 0;
  failNext: Error | undefined;
  readonly watch = new Watch();
  clock!: VirtualClock;

  private work(sku: string): Observable<{ reserved: string; run: number }> {
    return new Observable((subscriber) => {
      const run = ++this.subscriptions;
      const failure = this.failNext;
      this.failNext = undefined;
      this.watch.notify();
      let ended = false;
      const timer = this.clock.setTimeout(() => {
        ended = true;
        if (failure !== undefined) return subscriber.error(failure);
        this.completions++;
        subscriber.next({ reserved: sku, run });
        subscriber.complete();
      }, WORK_MS);
      return () => {
        if (ended) return;
        this.cancellations++;
        this.clock.clearTimeout(timer);
        this.watch.notify();
      };
    });
  }

  @Post('reserve')
  @Idempotent()
  reserve(@Body() body: { sku: string }): Observable<{ reserved: string; run: number }> {
    return this.work(body.sku);
  }

  @Post('hold')
  @Idempotent()
  @HttpCode(202)
  @Header('x-stock', 'held')
  hold(@Body() body: { sku: string }): Observable<{ reserved: string; run: number }> {
    return this.work(body.sku);
  }
}

/** Sends a keyed POST and hangs up (`req.destroy()`) once `hangUp` resolves, as a client that gives up does. */
function sendThenHangUp(base: string, path: string, key: string, body: unknown, hangUp: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(`${base}${path}`, {
      method: 'POST',
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end(JSON.stringify(body));
    void hangUp.then(() => req.destroy());
  });
}

const targets = [memoryTarget(), redisTarget('observable-disconnect')];

describe.each(
  PLATFORMS.flatMap((platform) =>
    targets.map((target) => ({ platform, target, name: `${target.name} on ${platform}` })),
  ),
)('an @Idempotent Observable route whose client hangs up: $name', ({ platform, target }) => {
  const url = target.server === undefined ? '' : serverOrSkip(target.server);
  if (url === undefined) return;

  let running: RunningApp;
  let stock: StockController;
  let clock: VirtualClock;

  beforeAll(() => target.setup(url));
  afterAll(() => target.teardown());
  beforeEach(async () => {
    clock = new VirtualClock();
    running = await startApp(
      { clock, idempotency: { principal: 'shared', store: target.create(clock) } },
      { controllers: [StockController] },
      {
        platform,
        // Counts the responses whose client went away, as the server sees it.
        prepare: (app: INestApplication) =>
          app.use((_req: unknown, res: { once(event: string, fn: () => void): void }, next: () => void) => {
            res.once('close', () => {
              stock.closes++;
              stock.watch.notify();
            });
            next();
          }),
      },
    );
    stock = running.app.get(StockController);
    stock.clock = clock;
    running.app.get(IdempotencyRegistry).onOutcome(() => stock.watch.notify());
  });
  afterEach(() => running.close());

  /** Starts a request, hangs up once its work runs, and waits until the server has seen the client go. */
  async function hangUpDuringWork(path: string, key: string): Promise<void> {
    const subscribed = stock.watch.until(() => stock.subscriptions === 1);
    await sendThenHangUp(running.url, path, key, { sku: 'sku-1' }, subscribed);
    await stock.watch.until(() => stock.closes === 1);
  }

  const outcomes = () => running.outcomes.map((o) => o.outcome);

  it('lets the work finish and stores its answer, so the retry with the same key gets it without running again', async () => {
    await hangUpDuringWork('/reserve', 'k-left');
    expect(stock.cancellations).toBe(0);
    await clock.advance(WORK_MS);
    await stock.watch.until(() => outcomes().includes('executed'));
    expect(stock.completions).toBe(1);

    const retry = await send(running.url, '/reserve', { key: 'k-left', body: { sku: 'sku-1' } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(json(retry)).toEqual({ reserved: 'sku-1', run: 1 });
    expect(stock.subscriptions).toBe(1);
    expect(outcomes()).toEqual(['executed', 'replayed']);
  });

  it("stores the answer with the route's @HttpCode and @Header, as Nest would have sent it", async () => {
    await hangUpDuringWork('/hold', 'k-hold');
    await clock.advance(WORK_MS);
    await stock.watch.until(() => outcomes().includes('executed'));

    const retry = await send(running.url, '/hold', { key: 'k-hold', body: { sku: 'sku-1' } });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('x-stock')).toBe('held');
    expect(json(retry)).toEqual({ reserved: 'sku-1', run: 1 });
  });

  it('settles the key by the failure the work ended with after the client left: a 503 keeps it, as for a client that stayed', async () => {
    stock.failNext = Object.assign(new Error('warehouse unavailable'), { status: 503 });
    await hangUpDuringWork('/reserve', 'k-failed');
    await clock.advance(WORK_MS);
    await stock.watch.until(() => outcomes().length === 1);
    expect(outcomes()).toEqual(['kept_unknown']);
    expect(stock.cancellations).toBe(0);
  });

  it('still answers a client that stays, and cancels nothing', async () => {
    const answer = send(running.url, '/reserve', { key: 'k-stay', body: { sku: 'sku-1' } });
    await stock.watch.until(() => stock.subscriptions === 1);
    await clock.advance(WORK_MS);
    const settled = await answer;
    expect(settled.status).toBe(201);
    expect(json(settled)).toEqual({ reserved: 'sku-1', run: 1 });
    expect(stock.cancellations).toBe(0);
    expect(outcomes()).toEqual(['executed']);
  });
});
