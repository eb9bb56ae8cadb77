import { Controller, Get, INestApplication, Query, Req } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import * as fc from 'fast-check';
import { AddressInfo, connect, Socket } from 'node:net';
import { LoadShedder, ResilienceModule } from '../../lib';

/**
 * The load shedder's door gives a place back exactly once, whichever ends
 * first: the answer, or the connection it was to be written on. Node never
 * closes or finishes a pipelined answer still queued behind another when the
 * client hangs up, so a door that waits only for the answer keeps the place
 * for good.
 */

/** Handlers wait here until the test opens it; no test waits on real time. */
class Gate {
  entered = 0;
  /** The server's side of each request's connection, by request id. */
  readonly sockets = new Map<string, Socket>();
  private open!: () => void;
  private opened = new Promise<void>((resolve) => (this.open = resolve));
  private watchers: Array<[number, () => void]> = [];

  async pass(id: string, socket: Socket): Promise<void> {
    this.sockets.set(id, socket);
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

  /** Resolves once the server has seen the connection of request `id` close. */
  disconnected(id: string): Promise<void> {
    const socket = this.sockets.get(id);
    if (socket === undefined || socket.closed) return Promise.resolve();
    return new Promise((resolve) => socket.once('close', () => resolve()));
  }

  reset(): void {
    this.sockets.clear();
    this.entered = 0;
    this.watchers = [];
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  }
}

const gate = new Gate();

@Controller()
class WorkController {
  @Get('work')
  async work(@Query('id') id: string, @Req() req: { socket?: Socket; raw?: { socket: Socket } }): Promise<string> {
    await gate.pass(id, req.raw?.socket ?? req.socket!);
    return `done ${id}`;
  }
}

const PLATFORMS = [
  ['Express', () => new ExpressAdapter()],
  ['Fastify', () => new FastifyAdapter()],
] as const;

/** What one client does, on its own connection. */
type Client =
  /** One request, answered, then the connection closes. */
  | { kind: 'completed' }
  /** One request; the client hangs up while the handler runs. */
  | { kind: 'aborted' }
  /** Several requests in one write; the client hangs up while they run, or reads every answer. */
  | { kind: 'pipelined'; requests: number; hangUp: boolean }
  /** Several requests one after another on one kept-alive connection, which stays open idle afterwards. */
  | { kind: 'keepAlive'; requests: number };

const client: fc.Arbitrary<Client> = fc.oneof(
  fc.constant<Client>({ kind: 'completed' }),
  fc.constant<Client>({ kind: 'aborted' }),
  fc.record({
    kind: fc.constant('pipelined' as const),
    requests: fc.integer({ min: 2, max: 4 }),
    hangUp: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('keepAlive' as const), requests: fc.integer({ min: 1, max: 3 }) }),
);

function hangsUp(c: Client): boolean {
  return c.kind === 'aborted' || (c.kind === 'pipelined' && c.hangUp);
}

function request(id: string, close = false): string {
  return `GET /work?id=${id} HTTP/1.1\r\nHost: localhost\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
}

/** A raw connection that counts the answers it has read. */
class Connection {
  readonly socket: Socket;
  private received = '';
  private watchers: Array<[number, () => void]> = [];

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      this.received += chunk;
      this.watchers = this.watchers.filter(([n, resolve]) => (this.answers >= n ? (resolve(), false) : true));
    });
    this.socket.on('error', () => undefined);
  }

  get answers(): number {
    return this.received.split('HTTP/1.1 200').length - 1;
  }

  answered(n: number): Promise<void> {
    return this.answers >= n ? Promise.resolve() : new Promise((resolve) => this.watchers.push([n, resolve]));
  }

  /** Resolves once the server has closed its side, or this side is destroyed. */
  closed(): Promise<void> {
    if (this.socket.closed) return Promise.resolve();
    return new Promise((resolve) => this.socket.once('close', () => resolve()));
  }
}

/** Turns of the event loop until `done`, at most `turns` of them (the close of a socket takes a few). */
async function settle(done: () => boolean, turns = 2000): Promise<void> {
  for (let i = 0; i < turns && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
}

describe.each(PLATFORMS)('the load-shedding door on %s', (_platform, adapter) => {
  let app: INestApplication;
  let shedder: LoadShedder;
  let port: number;

  beforeEach(async () => {
    gate.reset();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ metrics: false, loadShedding: { maxConcurrentRequests: 20 } })],
      controllers: [WorkController],
    }).compile();
    app = moduleRef.createNestApplication(adapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as AddressInfo).port;
    shedder = app.get(LoadShedder);
  });

  afterEach(async () => {
    gate.release();
    await app.close();
  });

  it('gives back the place of a pipelined request whose client hangs up before its answer is written', async () => {
    const connection = new Connection(port);
    connection.socket.write(request('first') + request('second'));
    await gate.reached(2);
    expect(shedder.inflight).toBe(2);
    connection.socket.destroy();
    await gate.disconnected('first');
    gate.release();
    await settle(() => shedder.inflight === 0);
    expect(shedder.inflight).toBe(0);
  });

  it('after 10 such clients fill a cap of 20, 20 new requests are all served', async () => {
    const connections = Array.from({ length: 10 }, (_, i) => {
      const connection = new Connection(port);
      connection.socket.write(request(`a${i}`) + request(`b${i}`));
      return connection;
    });
    await gate.reached(20);
    for (const connection of connections) connection.socket.destroy();
    await Promise.all(connections.map((_, i) => gate.disconnected(`a${i}`)));
    gate.release();
    await settle(() => shedder.inflight === 0);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => fetch(`http://127.0.0.1:${port}/work?id=later${i}`)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(shedder.inflight).toBe(0);
  });

  it('in-flight returns to 0 after any mix of pipelined, aborted, kept-alive and completed requests', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(client, { minLength: 1, maxLength: 6 }), async (clients) => {
        gate.reset();
        const connections = clients.map(() => new Connection(port));
        // Every client sends its first request (a pipelining client: all of them); the handlers hold.
        let expected = 0;
        clients.forEach((c, i) => {
          const count = c.kind === 'pipelined' ? c.requests : 1;
          const last = c.kind === 'completed';
          connections[i].socket.write(
            Array.from({ length: count }, (_, j) => request(`${i}-${j}`, last && j === count - 1)).join(''),
          );
          expected += count;
        });
        await gate.reached(expected);
        expect(shedder.inflight).toBe(expected);
        // The clients that hang up do it while their handlers still run.
        const hangingUp = connections.filter((_, i) => hangsUp(clients[i]));
        for (const connection of hangingUp) connection.socket.destroy();
        await Promise.all(clients.flatMap((c, i) => (hangsUp(c) ? [gate.disconnected(`${i}-0`)] : [])));
        gate.release();
        await Promise.all(
          clients.map(async (c, i) => {
            const connection = connections[i];
            if (c.kind === 'completed') return connection.closed();
            if (c.kind === 'pipelined' && !c.hangUp) {
              await connection.answered(c.requests);
              return connection.socket.end();
            }
            if (c.kind === 'keepAlive') {
              for (let j = 1; j < c.requests; j++) {
                await connection.answered(j);
                connection.socket.write(request(`${i}-${j}`));
              }
              await connection.answered(c.requests);
            }
          }),
        );
        await settle(() => shedder.inflight === 0);
        expect(shedder.inflight).toBe(0);
        // The kept-alive connections stay open, idle; they hold no place.
        for (const connection of connections) connection.socket.destroy();
        await Promise.all(connections.map((connection) => connection.closed()));
        await settle(() => shedder.inflight !== 0, 50);
        expect(shedder.inflight).toBe(0);
      }),
      { numRuns: 40 },
    );
  });
});
