import { Controller, INestApplication, INestMicroservice, Injectable, Logger } from '@nestjs/common';
import { ClientProxy, ClientProxyFactory, EventPattern, MessagePattern, Transport } from '@nestjs/microservices';
import { Test, TestingModule } from '@nestjs/testing';
import { AddressInfo, Server } from 'node:net';
import { firstValueFrom } from 'rxjs';
import {
  Bulkhead,
  CircuitBreaker,
  Idempotent,
  IdempotencyOutcomeEvent,
  IdempotencyRegistry,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  Retry,
  VirtualClock,
} from '../../lib';

/** A dependency's answer that retries and breakers treat as an outage. */
class Unavailable extends Error {
  readonly status = 503;
}

/** Resolves waiters once a condition holds, re-checked whenever the handlers report progress. */
class Progress {
  private waiters: Array<{ condition: () => boolean; resolve: () => void }> = [];

  notify(): void {
    this.waiters = this.waiters.filter((w) => (w.condition() ? (w.resolve(), false) : true));
  }

  until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ condition, resolve }));
  }
}

@Injectable()
class Ledger {
  readonly progress = new Progress();
  readonly charged: string[] = [];
  shipmentAttempts = 0;
  readonly shipped: string[] = [];
  failShipments = false;
  reportsRunning = 0;
  releaseReports!: () => void;
  readonly reportsReleased = new Promise<void>((resolve) => (this.releaseReports = resolve));

  record(): void {
    this.progress.notify();
  }
}

@Controller()
class OrdersHandler {
  constructor(private readonly ledger: Ledger) {}

  @MessagePattern('quote')
  @CircuitBreaker('psp')
  async quote(fail: boolean): Promise<string> {
    if (fail) throw new Unavailable('psp down');
    return 'quoted';
  }

  @MessagePattern('report')
  @Bulkhead('reports')
  async report(): Promise<string> {
    this.ledger.reportsRunning++;
    this.ledger.record();
    await this.ledger.reportsReleased;
    return 'report';
  }

  @MessagePattern('ping')
  ping(): string {
    return 'pong';
  }

  @MessagePattern('charge')
  @Idempotent({ key: (order: { id: string }) => order.id })
  @Retry('psp')
  async charge(order: { id: string }): Promise<{ chargeId: string }> {
    this.ledger.charged.push(order.id);
    return { chargeId: `ch_${order.id}_${this.ledger.charged.length}` };
  }

  @EventPattern('order.shipped')
  @Idempotent({ key: (event: { id: string }) => event.id })
  @Retry('psp')
  async shipped(event: { id: string }): Promise<void> {
    this.ledger.shipmentAttempts++;
    this.ledger.record();
    if (this.ledger.failShipments) throw new Unavailable('warehouse down');
    this.ledger.shipped.push(event.id);
    this.ledger.record();
  }
}

const OPTIONS: ResilienceModuleOptions = {
  circuitBreaker: {
    instances: {
      psp: {
        slidingWindowSize: 2,
        minimumNumberOfCalls: 2,
        failureRateThreshold: 50,
        waitDurationInOpenState: '12300ms',
      },
    },
  },
  retry: { instances: { psp: { maxAttempts: 3, waitDuration: 0 } } },
  bulkhead: { instances: { reports: { maxConcurrentCalls: 1 } } },
};

async function compile(): Promise<TestingModule> {
  return Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ ...OPTIONS, clock: new VirtualClock() })],
    controllers: [OrdersHandler],
    providers: [Ledger],
  }).compile();
}

const TCP = { transport: Transport.TCP, options: { host: '127.0.0.1', port: 0 } } as const;

/** A running microservice, however it was registered, and a TCP client connected to it. */
interface Running {
  readonly app: INestApplication | INestMicroservice;
  readonly client: ClientProxy;
}

async function connect(app: INestApplication | INestMicroservice, server: INestMicroservice): Promise<Running> {
  const { port } = server.unwrap<Server>().address() as AddressInfo;
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
  return { app, client };
}

/** The ways an application installs the filter on a microservice. */
const REGISTRATIONS: Record<string, () => Promise<Running>> = {
  'useGlobalFilters on the microservice': async () => {
    const app = (await compile()).createNestMicroservice(TCP);
    app.useLogger(false);
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await app.listen();
    return connect(app, app);
  },
  'connectMicroservice with inheritAppConfig': async () => {
    const app = (await compile()).createNestApplication({ logger: false });
    app.useGlobalFilters(new ResilienceExceptionFilter());
    const server = app.connectMicroservice(TCP, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.init();
    return connect(app, server);
  },
};

const errorOf = (answer: Promise<unknown>): Promise<unknown> =>
  answer.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );

describe.each(Object.keys(REGISTRATIONS))('ResilienceExceptionFilter over TCP, installed by %s', (registration) => {
  let running: Running;
  let ledger: Ledger;
  const outcomes: IdempotencyOutcomeEvent[] = [];
  const send = <T>(pattern: string, data: unknown): Promise<T> => firstValueFrom(running.client.send<T>(pattern, data));

  beforeEach(async () => {
    running = await REGISTRATIONS[registration]();
    ledger = running.app.get(Ledger);
    outcomes.length = 0;
    running.app.get(IdempotencyRegistry).onOutcome((event) => {
      outcomes.push(event);
      ledger.record();
    });
  });

  afterEach(async () => {
    await running.client.close();
    await running.app.close();
  });

  it('gives a @MessagePattern client the code, message and retry-after of an open breaker', async () => {
    await errorOf(send('quote', true));
    await errorOf(send('quote', true));
    expect(running.app.get(ResilienceRegistry).circuitBreaker('psp').state).toBe('OPEN');

    expect(await errorOf(send('quote', false))).toEqual({
      status: 'error',
      code: 'CALL_NOT_PERMITTED',
      message: "CircuitBreaker 'psp' is OPEN and does not permit further calls",
      retryAfterMs: 12_300,
    });
  });

  it('gives a full bulkhead its code and the default retry-after, and leaves other errors to Nest', async () => {
    const held = send('report', {});
    await ledger.progress.until(() => ledger.reportsRunning === 1);
    expect(await errorOf(send('report', {}))).toEqual({
      status: 'error',
      code: 'BULKHEAD_FULL',
      message: "Bulkhead 'reports' is full and does not permit further calls (queue-full)",
      retryAfterMs: 1000,
    });
    ledger.releaseReports();
    expect(await held).toBe('report');
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      expect(await errorOf(send('quote', true))).toEqual({ status: 'error', message: 'Internal server error' });
    } finally {
      logged.mockRestore();
    }
  });

  it('runs an @Idempotent @Retry message handler once per key and answers a redelivery with the stored result', async () => {
    const first = await send<{ chargeId: string }>('charge', { id: 'o-1' });
    const again = await send<{ chargeId: string }>('charge', { id: 'o-1' });
    expect(first).toEqual({ chargeId: 'ch_o-1_1' });
    expect(again).toEqual(first);
    expect(ledger.charged).toEqual(['o-1']);
    expect(outcomes.map((o) => o.outcome)).toEqual(['executed', 'replayed']);
  });

  it('survives a failing @EventPattern handler: retried, its error logged, its key kept, a redelivery refused, the service still answering', async () => {
    const logged: unknown[] = [];
    const logger = jest.spyOn(Logger.prototype, 'error').mockImplementation((error: unknown) => {
      logged.push(error);
      ledger.record();
    });
    try {
      ledger.failShipments = true;
      running.client.emit('order.shipped', { id: 's-1' });
      await ledger.progress.until(() => logged.length === 1 && outcomes.length === 1);
      expect(ledger.shipmentAttempts).toBe(3);
      expect(logged[0]).toBeInstanceOf(Unavailable);
      expect(outcomes.map((o) => [o.outcome, o.key])).toEqual([['kept_unknown', 's-1']]);

      // A redelivery of an event whose outcome is unknown is refused by the idempotency layer; the filter answers it quietly.
      running.client.emit('order.shipped', { id: 's-1' });
      await ledger.progress.until(() => outcomes.length === 2);
      expect(outcomes[1]).toMatchObject({ outcome: 'in_progress', key: 's-1' });
      expect(ledger.shipmentAttempts).toBe(3);
      expect(logged).toHaveLength(1);

      ledger.failShipments = false;
      running.client.emit('order.shipped', { id: 's-2' });
      await ledger.progress.until(() => outcomes.length === 3);
      running.client.emit('order.shipped', { id: 's-2' });
      await ledger.progress.until(() => outcomes.length === 4);
      expect(outcomes.slice(2).map((o) => [o.outcome, o.key])).toEqual([
        ['executed', 's-2'],
        ['replayed', 's-2'],
      ]);
      expect(ledger.shipped).toEqual(['s-2']);
      expect(await send('ping', {})).toBe('pong');
    } finally {
      logger.mockRestore();
    }
  });
});
