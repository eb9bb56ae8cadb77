import { Controller, Get, INestApplication, INestMicroservice, Injectable, Query } from '@nestjs/common';
import { ClientProxy, ClientProxyFactory, MessagePattern, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo, Server as NetServer } from 'node:net';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import {
  currentSignal,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';

/**
 * A loopback server that accepts every request and never answers: a
 * dependency that hangs. It reports each request as it arrives and when its
 * connection is closed by the client (a fetch that was aborted).
 */
class HangingServer {
  private readonly server: Server;
  private arrivals: ((req: IncomingMessage) => void)[] = [];
  readonly open = new Set<IncomingMessage>();

  constructor() {
    this.server = createServer((req) => {
      this.open.add(req);
      req.socket.on('close', () => this.open.delete(req));
      const waiting = this.arrivals;
      this.arrivals = [];
      for (const arrived of waiting) arrived(req);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hang`;
  }

  /** The next request to arrive. */
  nextRequest(): Promise<IncomingMessage> {
    return new Promise((resolve) => this.arrivals.push(resolve));
  }

  /** Resolves once `req`'s connection has closed. */
  closed(req: IncomingMessage): Promise<void> {
    if (req.socket.closed) return Promise.resolve();
    return new Promise((resolve) => req.socket.once('close', () => resolve()));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const LIMIT_MS = 200;

@Injectable()
class Catalog {
  readonly signals: (AbortSignal | undefined)[] = [];

  constructor(private readonly registry: ResilienceRegistry) {}

  /** Reads its signal before the first await, as the docs say, and hands it to fetch. */
  @Timeout(LIMIT_MS)
  async lookup(url: string): Promise<string> {
    const signal = currentSignal();
    this.signals.push(signal);
    const response = await fetch(url, { signal });
    return response.text();
  }

  /** The same through a code pipeline: the signal is the argument `execute` hands over. */
  viaPipeline(url: string): Promise<string> {
    return this.registry.pipeline({ timeLimiter: { timeoutDuration: LIMIT_MS } }).execute(async (signal) => {
      this.signals.push(signal);
      const response = await fetch(url, { signal });
      return response.text();
    });
  }
}

@Controller()
class LookupController {
  constructor(private readonly catalog: Catalog) {}

  @Get('lookup')
  lookup(@Query('url') url: string, @Query('via') via: string) {
    return via === 'pipeline' ? this.catalog.viaPipeline(url) : this.catalog.lookup(url);
  }

  @MessagePattern('lookup')
  lookupMessage(message: { url: string; via: string }) {
    return message.via === 'pipeline' ? this.catalog.viaPipeline(message.url) : this.catalog.lookup(message.url);
  }
}

describe('a @Timeout stops its work outside any request deadline (no `deadline` option)', () => {
  const hanging = new HangingServer();
  const clock = new VirtualClock();
  let url: string;
  let app: INestApplication;
  let microservice: INestMicroservice;
  let client: ClientProxy;
  let catalog: Catalog;

  beforeAll(async () => {
    url = await hanging.listen();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ clock })],
      controllers: [LookupController],
      providers: [Catalog],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalFilters(new ResilienceExceptionFilter());
    microservice = app.connectMicroservice(
      { transport: Transport.TCP, options: { host: '127.0.0.1', port: 0 } },
      { inheritAppConfig: true },
    );
    await app.startAllMicroservices();
    await app.init();
    const { port } = microservice.unwrap<NetServer>().address() as AddressInfo;
    client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    await client.connect();
    catalog = app.get(Catalog);
  });

  afterAll(async () => {
    await client.close();
    await app.close();
    await hanging.close();
  });

  /** Starts a lookup, waits for it to reach the hanging server, passes the limit, and returns what happened. */
  async function timedOut(start: () => Promise<unknown>) {
    const before = catalog.signals.length;
    const arrived = hanging.nextRequest();
    const outcome = start().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const req = await arrived;
    const signal = catalog.signals[before];
    expect(signal?.aborted).toBe(false);
    await clock.advance(LIMIT_MS);
    await hanging.closed(req);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(TimeoutExceededError);
    expect(hanging.open.has(req)).toBe(false);
    return outcome;
  }

  it.each(['method', 'pipeline'])(
    'from a timer (%s): the signal aborts at the limit and the fetch is closed',
    async (via) => {
      const outcome = await timedOut(
        () =>
          new Promise<unknown>((resolve, reject) =>
            setImmediate(() => {
              (via === 'pipeline' ? catalog.viaPipeline(url) : catalog.lookup(url)).then(resolve, reject);
            }),
          ),
      );
      expect(outcome).toEqual({ error: expect.any(TimeoutExceededError) });
    },
  );

  it.each(['method', 'pipeline'])(
    'from an HTTP route (%s): the signal aborts at the limit, the fetch is closed, 504',
    async (via) => {
      const outcome = await timedOut(() =>
        request(app.getHttpServer())
          .get('/lookup')
          .query({ url, via })
          .then((r) => r),
      );
      expect(outcome).toMatchObject({ value: { status: 504 } });
    },
  );

  it.each(['method', 'pipeline'])(
    'from a message handler (%s): the signal aborts at the limit and the fetch is closed',
    async (via) => {
      const outcome = await timedOut(() => firstValueFrom(client.send('lookup', { url, via })));
      expect(outcome).toMatchObject({ error: { code: 'TIMEOUT_EXCEEDED' } });
    },
  );
});
