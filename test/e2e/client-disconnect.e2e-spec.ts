import { Controller, Injectable, Post } from '@nestjs/common';
import { Agent, request as httpRequest } from 'node:http';
import { connect, Socket } from 'node:net';
import { currentSignal, DeadlineExceededError, Idempotent, Retry, Timeout, VirtualClock } from '../../lib';
import { IdempotencyStore } from '../../lib/features/idempotency/idempotency-store';
import { PLATFORMS } from '../support/platforms';
import { serverOrSkip } from '../support/server-env';
import { json, RunningApp, send, startApp, Watch } from '../idempotency/http-kit';
import { memoryTarget, redisTarget } from '../idempotency/store-targets';

/**
 * A client that goes away cancels what its request still had to do: the
 * request's signal aborts, so `@Retry` starts no further attempt and ends
 * its wait at once. An `@Idempotent` request runs on, so the answer is
 * stored for the client's retry with the same key.
 */

/** A connection reset by the provider: retried by default. */
class ConnectionReset extends Error {
  readonly code = 'ECONNRESET';
}

@Injectable()
class Provider {
  attempts = 0;
  /** Attempts that fail before one succeeds. */
  failures = Number.POSITIVE_INFINITY;
  readonly watch = new Watch();

  @Retry('psp')
  async charge(): Promise<{ charged: number }> {
    this.attempts++;
    this.watch.notify();
    if (this.attempts <= this.failures) throw new ConnectionReset('socket hang up');
    return { charged: this.attempts };
  }

  /** Waits, inside its time limit, until its signal aborts; says why it did. */
  @Timeout('slow')
  async waitForAbort(): Promise<unknown> {
    const signal = currentSignal() as AbortSignal;
    this.attempts++;
    this.watch.notify();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return signal.reason;
  }
}

/** What each request saw: its signal as the handler started, and how the call ended. */
class Seen {
  readonly signals: Array<AbortSignal | undefined> = [];
  readonly endings: unknown[] = [];
  readonly watch = new Watch();
}

@Controller()
class PaymentsController {
  constructor(
    private readonly provider: Provider,
    private readonly seen: Seen,
  ) {}

  @Post('transfers')
  transfer() {
    return this.run();
  }

  @Post('payments')
  @Idempotent()
  pay() {
    return this.run();
  }

  @Post('deliveries')
  @Idempotent()
  async deliver() {
    const signal = currentSignal() as AbortSignal;
    this.seen.signals.push(signal);
    this.seen.watch.notify();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    this.seen.endings.push(signal.reason);
    this.seen.watch.notify();
  }

  @Post('exports')
  async export() {
    try {
      this.seen.endings.push(await this.provider.waitForAbort());
    } catch (error) {
      this.seen.endings.push(error);
    } finally {
      this.seen.watch.notify();
    }
  }

  private async run() {
    this.seen.signals.push(currentSignal());
    try {
      const answer = await this.provider.charge();
      this.seen.endings.push(answer);
      return answer;
    } catch (error) {
      this.seen.endings.push(error);
      throw error;
    } finally {
      this.seen.watch.notify();
    }
  }
}

/** Turns of the event loop until `done`, at most `turns` of them (a socket's close takes a few). */
async function settle(done: () => boolean, turns = 2000): Promise<void> {
  for (let i = 0; i < turns && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Runs the virtual clock's due work until a timer is pending (the retry is waiting). */
async function untilWaiting(clock: VirtualClock): Promise<void> {
  for (let i = 0; i < 200 && clock.pendingTimers === 0; i++) await VirtualClock.settle();
  expect(clock.pendingTimers).toBeGreaterThan(0);
}

/** Resolves once the server has seen every connection close. */
async function connectionsClosed(running: RunningApp): Promise<void> {
  const server = running.app.getHttpServer() as { getConnections(cb: (e: unknown, n: number) => void): void };
  let open = 1;
  await settle(() => {
    server.getConnections((_, n) => (open = n));
    return open === 0;
  });
  expect(open).toBe(0);
}

/** Sends a POST with node:http and returns the request, to hang up with `destroy()`. */
function postAndHangUp(url: string, path: string, headers: Record<string, string> = {}) {
  const req = httpRequest(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
  });
  req.on('error', () => undefined);
  req.end('{}');
  return req;
}

const RETRY = { instances: { psp: { maxAttempts: 5, waitDuration: '1s', jitter: 'none' as const } } };

async function boot(platform: (typeof PLATFORMS)[number], clock: VirtualClock, store?: IdempotencyStore) {
  return startApp(
    {
      clock,
      deadline: {},
      retry: RETRY,
      timeLimiter: { instances: { slow: { timeoutDuration: '1m' } } },
      idempotency: { principal: 'shared', ...(store === undefined ? {} : { store }) },
    },
    { controllers: [PaymentsController], providers: [Provider, Seen] },
    { platform },
  );
}

describe.each(PLATFORMS)('a client that hangs up (%s)', (platform) => {
  let clock: VirtualClock;
  let running: RunningApp;
  let provider: Provider;
  let seen: Seen;

  beforeEach(async () => {
    clock = new VirtualClock();
    running = await boot(platform, clock);
    provider = running.app.get(Provider);
    seen = running.app.get(Seen);
  });
  afterEach(() => running.close());

  it('cancels the remaining retries of a non-idempotent request: the wait ends with the last error, no attempt follows', async () => {
    const req = postAndHangUp(running.url, '/transfers');
    await provider.watch.until(() => provider.attempts === 1);
    await untilWaiting(clock);
    req.destroy();
    await seen.watch.until(() => seen.endings.length === 1);
    expect(seen.signals[0]?.aborted).toBe(true);
    expect((seen.signals[0]?.reason as Error).name).toBe('AbortError');
    // As Resilience4j and cockatiel: a cancelled retry ends with the method's last error.
    expect(seen.endings[0]).toBeInstanceOf(ConnectionReset);
    await clock.advance(60_000);
    expect(provider.attempts).toBe(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('aborts the signal a time-limited attempt sees, which follows the request, and the call settles at once', async () => {
    const req = postAndHangUp(running.url, '/exports');
    await provider.watch.until(() => provider.attempts === 1);
    req.destroy();
    await seen.watch.until(() => seen.endings.length === 1);
    // The call rejects with the caller's AbortError, caused by the client's going away (the signal's reason).
    const ending = seen.endings[0] as Error & { cause?: Error };
    expect(ending.name).toBe('AbortError');
    expect(ending.cause?.name).toBe('AbortError');
    expect(ending.cause?.message).toContain('the client closed the connection');
  });

  it('an @Idempotent request keeps its deadline: its signal aborts when the deadline passes, not when the client leaves', async () => {
    const req = postAndHangUp(running.url, '/deliveries', {
      'idempotency-key': 'k-late',
      'x-request-deadline-ms': '2500',
    });
    await seen.watch.until(() => seen.signals.length === 1);
    req.destroy();
    await connectionsClosed(running);
    expect(seen.signals[0]?.aborted).toBe(false);
    await clock.advance(2_499);
    expect(seen.signals[0]?.aborted).toBe(false);
    await clock.advance(1);
    await seen.watch.until(() => seen.endings.length === 1);
    expect(seen.endings[0]).toBeInstanceOf(DeadlineExceededError);
  });

  it('cancels every pipelined request of a connection that closes, the queued one too', async () => {
    const socket: Socket = connect(Number(new URL(running.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    const post =
      'POST /transfers HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';
    socket.write(post + post);
    await provider.watch.until(() => provider.attempts === 2);
    await untilWaiting(clock);
    socket.destroy();
    await seen.watch.until(() => seen.endings.length === 2);
    expect(seen.signals.map((s) => s?.aborted)).toEqual([true, true]);
    await clock.advance(60_000);
    expect(provider.attempts).toBe(2);
  });

  it('a request answered on a kept-alive connection is never aborted, not even when the connection closes later', async () => {
    provider.failures = 0;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 2; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${running.url}/transfers`, { method: 'POST', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(201);
    }
    agent.destroy();
    await settle(() => false, 200);
    expect(seen.signals).toHaveLength(2);
    expect(seen.signals.map((s) => s?.aborted)).toEqual([false, false]);
  });
});

const targets = [memoryTarget(), redisTarget('disconnect')];

describe.each(
  PLATFORMS.flatMap((platform) =>
    targets.map((target) => ({ platform, target, name: `${target.name} on ${platform}` })),
  ),
)('an @Idempotent request whose client hangs up: $name', ({ platform, target }) => {
  const url = target.server === undefined ? '' : serverOrSkip(target.server);
  if (url === undefined) return;

  let clock: VirtualClock;
  let running: RunningApp;
  let provider: Provider;
  let seen: Seen;

  beforeAll(() => target.setup(url));
  afterAll(() => target.teardown());
  beforeEach(async () => {
    clock = new VirtualClock();
    running = await boot(platform, clock, target.create(clock));
    provider = running.app.get(Provider);
    seen = running.app.get(Seen);
  });
  afterEach(() => running.close());

  it('completes, stores its answer, and the retry with the same key gets it without running again', async () => {
    provider.failures = 1;
    const req = postAndHangUp(running.url, '/payments', { 'idempotency-key': 'k-gone' });
    await provider.watch.until(() => provider.attempts === 1);
    await untilWaiting(clock);
    req.destroy();
    await connectionsClosed(running);
    expect(seen.signals[0]?.aborted).toBe(false);
    await clock.advance(1_000);
    await seen.watch.until(() => seen.endings.length === 1);
    expect(seen.endings[0]).toEqual({ charged: 2 });
    await settle(() => running.outcomes.some((o) => o.outcome === 'executed'));
    expect(running.outcomes.map((o) => o.outcome)).toEqual(['executed']);
    const again = await send(running.url, '/payments', { key: 'k-gone', body: {} });
    expect(again.status).toBe(201);
    expect(json(again)).toEqual({ charged: 2 });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(provider.attempts).toBe(2);
  });
});
