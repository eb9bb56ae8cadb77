import { CanActivate, Controller, Get, INestApplication, Injectable, Post, UseGuards } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import {
  EventLoopDelayProbe,
  LoadShedder,
  LoadSheddingOptions,
  Priority,
  ResilienceEndpointsModule,
  ResilienceHealthIndicator,
  ResilienceModule,
  VirtualClock,
} from '../../lib';
import { readLoadSheddingOptions } from '../../lib/features/load-shedding/load-shedding.options';

/** Handlers hold here until the test lets them finish, so no test waits on real time. */
class Gate {
  entered = 0;
  private open!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  private watchers: Array<[number, () => void]> = [];

  async pass(): Promise<void> {
    this.entered++;
    this.watchers = this.watchers.filter(([n, resolve]) => (this.entered >= n ? (resolve(), false) : true));
    await this.opened;
  }

  reached(n: number): Promise<void> {
    return this.entered >= n ? Promise.resolve() : new Promise((resolve) => this.watchers.push([n, resolve]));
  }

  release(): void {
    this.open();
  }
}

let gate: Gate;
let guarded = 0;

@Injectable()
class CountingGuard implements CanActivate {
  canActivate(): boolean {
    guarded++;
    return true;
  }
}

@Controller()
@UseGuards(CountingGuard)
class ShopController {
  @Get('slow')
  async slow(): Promise<string> {
    await gate.pass();
    return 'ok';
  }

  @Post('payments')
  @Priority('critical')
  async pay(): Promise<string> {
    await gate.pass();
    return 'paid';
  }
}

@Controller('recommendations')
@Priority('low')
class RecommendationsController {
  @Get()
  async list(): Promise<string> {
    await gate.pass();
    return 'recommended';
  }
}

@Controller('health')
@Priority('critical')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly resilience: ResilienceHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.resilience.checkOverload()]);
  }
}

const PLATFORMS = [
  ['Express', () => new ExpressAdapter()],
  ['Fastify', () => new FastifyAdapter()],
] as const;

interface Answer {
  status: number;
  retryAfter: string | null;
  type: string | null;
  body: { reason?: string; priority?: string; status?: number; type?: string };
}

describe.each(PLATFORMS)('load shedding on %s', (_platform, adapter) => {
  let app: INestApplication | undefined;
  let base = '';
  let metrics: Registry;

  async function boot(loadShedding: LoadSheddingOptions, shedder?: LoadShedder): Promise<void> {
    metrics = new Registry();
    let builder = Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({ clock: new VirtualClock(), loadShedding, metrics: { registry: metrics } }),
        ResilienceEndpointsModule.forRoot({ status: { public: true } }),
        TerminusModule.forRoot({ logger: false }),
      ],
      controllers: [ShopController, RecommendationsController, HealthController],
    });
    if (shedder !== undefined) builder = builder.overrideProvider(LoadShedder).useValue(shedder);
    app = (await builder.compile()).createNestApplication(adapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  }

  async function call(path: string, init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(base + path, init);
    const text = await response.text();
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      type: response.headers.get('content-type'),
      body: text.startsWith('{') ? (JSON.parse(text) as Answer['body']) : {},
    };
  }

  async function sample(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const metric = await metrics.getSingleMetricAsString(name);
    const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
    const line = metric.split('\n').find((l) => l.startsWith(name) && wanted.every((w) => l.includes(w)));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  }

  beforeEach(() => {
    gate = new Gate();
    guarded = 0;
  });

  afterEach(async () => {
    gate.release();
    await app?.close();
    app = undefined;
  });

  it('with a fixed cap of 5, serves exactly 5 of 30 simultaneous requests and refuses 25 before guards, while the 5 still run', async () => {
    await boot({ maxConcurrentRequests: 5 });
    const refused: Answer[] = [];
    const all = Array.from({ length: 30 }, () =>
      call('/slow').then((answer) => {
        if (answer.status === 503) refused.push(answer);
        return answer;
      }),
    );
    await gate.reached(5);
    while (refused.length < 25) await new Promise((resolve) => setImmediate(resolve));
    // Every refusal came back while the admitted handlers were still held: none waited for a place.
    expect(gate.entered).toBe(5);
    expect(await sample('resilience4nest_inflight_requests')).toBe(5);
    gate.release();
    const answers = await Promise.all(all);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    expect(refused).toHaveLength(25);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.type).toContain('application/problem+json');
      expect(answer.body).toMatchObject({
        status: 503,
        reason: 'concurrency',
        priority: 'normal',
        type: 'https://resilience4nest.dev/problems/overloaded',
      });
    }
    expect(gate.entered).toBe(5);
    expect(guarded).toBe(5);
    expect(await sample('resilience4nest_shed_requests_total', { reason: 'concurrency', priority: 'normal' })).toBe(25);
    expect(await sample('resilience4nest_concurrency_limit')).toBe(5);
    expect(await sample('resilience4nest_inflight_requests')).toBe(0);
  });

  it('with priorities and a cap of 24, 40 low then 10 critical requests: every critical served, only low shed', async () => {
    await boot({ maxConcurrentRequests: 24, priorities: { critical: 0, high: 0.1, normal: 0.3, low: 0.5 } });
    let lowShed = 0;
    const low = Array.from({ length: 40 }, () =>
      call('/recommendations').then((answer) => {
        if (answer.status === 503) lowShed++;
        return answer;
      }),
    );
    await gate.reached(12);
    while (lowShed < 28) await new Promise((resolve) => setImmediate(resolve));
    const critical = Array.from({ length: 10 }, () => call('/payments', { method: 'POST' }));
    await gate.reached(22);
    gate.release();
    const lowAnswers = await Promise.all(low);
    const criticalAnswers = await Promise.all(critical);
    expect(criticalAnswers.map((a) => a.status)).toEqual(Array(10).fill(201));
    expect(lowAnswers.filter((a) => a.status === 200)).toHaveLength(12);
    const shed = lowAnswers.filter((a) => a.status === 503);
    expect(shed).toHaveLength(28);
    expect(shed.every((a) => a.body.priority === 'low' && a.body.reason === 'priority')).toBe(true);
    expect(await sample('resilience4nest_shed_requests_total', { reason: 'concurrency', priority: 'low' })).toBe(28);
    expect(await sample('resilience4nest_shed_requests_total', { reason: 'concurrency', priority: 'critical' })).toBe(
      0,
    );
  });

  it('takes the class from the priority header when one is configured', async () => {
    await boot({ maxConcurrentRequests: 2, priorities: { low: 0.5 }, priorityHeader: 'x-priority' });
    const first = call('/slow', { headers: { 'x-priority': 'low' } });
    await gate.reached(1);
    expect((await call('/slow', { headers: { 'x-priority': 'low' } })).body).toMatchObject({
      reason: 'priority',
      priority: 'low',
    });
    const second = call('/slow', { headers: { 'x-priority': 'bogus' } });
    await gate.reached(2);
    gate.release();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
  });

  /** The class the door gave a request to `path` asking for `asked`, read from its refusal while one request holds the only place. */
  async function classGiven(path: string, asked: string, method = 'GET'): Promise<string | undefined> {
    const answer = await call(path, { method, headers: { 'x-priority': asked } });
    expect(answer.status).toBe(503);
    return answer.body.priority;
  }

  it('with priorityHeader { name }, lets the header lower a request below its route’s @Priority but never raise it', async () => {
    await boot({ maxConcurrentRequests: 1, priorityHeader: { name: 'x-priority' } });
    const held = call('/slow');
    await gate.reached(1);
    expect(await classGiven('/recommendations', 'critical')).toBe('low');
    expect(await classGiven('/slow', 'high')).toBe('normal');
    expect(await classGiven('/slow', 'low')).toBe('low');
    expect(await classGiven('/payments', 'high', 'POST')).toBe('high');
    expect(await classGiven('/payments', 'critical', 'POST')).toBe('critical');
    expect(await classGiven('/slow', 'bogus')).toBe('normal');
    gate.release();
    expect((await held).status).toBe(200);
  });

  it('with priorityHeader { name, max }, lets the header raise a request up to max, or its route’s @Priority when higher', async () => {
    await boot({ maxConcurrentRequests: 1, priorityHeader: { name: 'X-Priority', max: 'high' } });
    const held = call('/slow');
    await gate.reached(1);
    expect(await classGiven('/recommendations', 'critical')).toBe('high');
    expect(await classGiven('/recommendations', 'normal')).toBe('normal');
    expect(await classGiven('/slow', 'low')).toBe('low');
    expect(await classGiven('/payments', 'critical', 'POST')).toBe('critical');
    gate.release();
    expect((await held).status).toBe(200);
  });

  it('with priorityHeader as a bare name, lets the header set any class, as a gateway that writes it wants', async () => {
    await boot({ maxConcurrentRequests: 1, priorityHeader: 'x-priority' });
    const held = call('/slow');
    await gate.reached(1);
    expect(await classGiven('/recommendations', 'critical')).toBe('critical');
    expect(await classGiven('/payments', 'low', 'POST')).toBe('low');
    gate.release();
    expect((await held).status).toBe(200);
  });

  it('drops a request whose deadline has already passed at the door: 504, no guard, no handler, counted as deadline', async () => {
    await boot({ maxConcurrentRequests: 10 });
    const answer = await call('/recommendations', { headers: { 'x-request-deadline-ms': '0' } });
    expect(answer.status).toBe(504);
    expect(answer.body).toMatchObject({ status: 504, type: 'https://resilience4nest.dev/problems/deadline-exceeded' });
    expect(gate.entered).toBe(0);
    expect(guarded).toBe(0);
    expect(await sample('resilience4nest_shed_requests_total', { reason: 'deadline', priority: 'low' })).toBe(1);
  });

  it('refuses all but critical requests while the event loop lags, and admits them again when it recovers', async () => {
    const clock = new VirtualClock();
    const readings: number[] = [];
    const probe: EventLoopDelayProbe = {
      takeMaxMs: () => readings.shift() ?? 0,
      peekMaxMs: () => 0,
      close: () => undefined,
    };
    const options = readLoadSheddingOptions({ eventLoopDelay: { threshold: '100ms', sampleInterval: '500ms' } });
    await boot({ eventLoopDelay: { threshold: '100ms' } }, new LoadShedder(options, clock, Math.random, probe));
    readings.push(300, 5);
    await clock.advance(500);
    const refused = await call('/slow');
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ reason: 'event-loop-delay', priority: 'normal' });
    gate.release();
    expect((await call('/payments', { method: 'POST' })).status).toBe(201);
    expect(await sample('resilience4nest_event_loop_delay_seconds')).toBe(0.3);
    await clock.advance(500);
    expect((await call('/slow')).status).toBe(200);
    expect(
      await sample('resilience4nest_shed_requests_total', { reason: 'event-loop-delay', priority: 'normal' }),
    ).toBe(1);
  });

  it('reports overload to readiness probes and on the status endpoint while normal requests are refused', async () => {
    await boot({ maxConcurrentRequests: 10, priorities: { normal: 0.5 } });
    const held = Array.from({ length: 5 }, () => call('/slow'));
    await gate.reached(5);
    const down = await call('/health');
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({
      status: 'error',
      error: { loadShedding: { status: 'down', limit: 10, inflight: 6, eventLoopDelayMs: 0 } },
    });
    const status = (await call('/actuator/loadshedding')).body as { loadShedding?: unknown };
    expect(status.loadShedding).toMatchObject({
      limit: 10,
      inflight: 6,
      overloaded: true,
      shed: { concurrency: { normal: 0 }, deadline: { low: 0 } },
    });
    gate.release();
    await Promise.all(held);
    const up = await call('/health');
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ status: 'ok', info: { loadShedding: { status: 'up', inflight: 1 } } });
  });

  it('lets every request through without loadShedding, and the LoadShedder is still injectable', async () => {
    metrics = new Registry();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ metrics: { registry: metrics } })],
      controllers: [ShopController],
    }).compile();
    app = moduleRef.createNestApplication(adapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    gate.release();
    expect((await call('/slow', { headers: { 'x-request-deadline-ms': '0' } })).status).not.toBe(503);
    expect(app.get(LoadShedder).limit).toBe(Infinity);
    expect(metrics.getSingleMetric('resilience4nest_inflight_requests')).toBeUndefined();
  });
});

describe('load shedding on Fastify', () => {
  it('refuses before the body is read: the content-type parser never runs for a refused request', async () => {
    gate = new Gate();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ metrics: false, loadShedding: { maxConcurrentRequests: 1 } })],
      controllers: [ShopController],
    }).compile();
    const adapter = new FastifyAdapter();
    let parsed = 0;
    adapter.getInstance().addContentTypeParser('application/x-order', { parseAs: 'string' }, (_req, body, done) => {
      parsed++;
      done(null, body);
    });
    const app = moduleRef.createNestApplication(adapter, { logger: false });
    try {
      await app.listen(0, '127.0.0.1');
      const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/payments`;
      const post = () =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-order' }, body: 'x'.repeat(1000) });
      const admitted = post();
      await gate.reached(1);
      expect(parsed).toBe(1);
      const refused = await Promise.all([post(), post(), post()]);
      expect(refused.map((r) => r.status)).toEqual([503, 503, 503]);
      expect(parsed).toBe(1);
      gate.release();
      expect((await admitted).status).toBe(201);
    } finally {
      gate.release();
      await app.close();
    }
  });
});
