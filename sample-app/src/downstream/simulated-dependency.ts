import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/** How a simulated dependency behaves; changed at run time through its admin endpoint. */
export interface DependencyBehaviour {
  /** Added to every answer, in ms. */
  latencyMs: number;
  /** Share of requests answered with 503, in [0, 1]. */
  errorRate: number;
  /** Down: connections are accepted and never answered (the worst kind of outage). */
  down: boolean;
  /** Lost replies: requests are served (a charge is made) but the answer never arrives. */
  loseReplies: boolean;
}

type Handler = (
  request: IncomingMessage,
  body: unknown,
) => { status: number; body: unknown } | Promise<{ status: number; body: unknown }>;

/**
 * A real HTTP server on loopback standing in for a third-party API, so the
 * sample shows every defence against a dependency that really fails.
 * `POST /__admin` with a JSON `DependencyBehaviour` (partial) changes how it
 * behaves; `GET /__admin` shows it.
 */
export class SimulatedDependency {
  private behaviour: DependencyBehaviour = { latencyMs: 5, errorRate: 0, down: false, loseReplies: false };
  private readonly hanging = new Set<ServerResponse>();
  /** Requests that reached the dependency's own handler. */
  served = 0;
  /** Requests whose client closed the connection before they were answered (a caller gave up). */
  abandoned = 0;
  /** The `x-request-deadline-ms` header of the last request, as the caller sent it. */
  lastDeadlineHeader: string | undefined;
  private answering = 0;

  private constructor(
    readonly name: string,
    private readonly server: Server,
    private readonly handler: Handler,
  ) {}

  /** Starts a dependency on a free loopback port. */
  static async start(name: string, handler: Handler): Promise<SimulatedDependency> {
    const server = createServer((req, res) => void dependency.handle(req, res));
    const dependency = new SimulatedDependency(name, server, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return dependency;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Requests being answered right now (not counting those a down dependency leaves hanging). */
  get busy(): number {
    return this.answering;
  }

  /** Requests a down dependency is leaving unanswered. */
  get hangingRequests(): number {
    return this.hanging.size;
  }

  /** Current behaviour. */
  get current(): DependencyBehaviour {
    return { ...this.behaviour };
  }

  /** Changes the behaviour; bringing it back up (or delivering replies again) answers the requests left hanging with 503. */
  configure(change: Partial<DependencyBehaviour>): DependencyBehaviour {
    const next = { ...this.behaviour, ...change };
    if (typeof next.latencyMs !== 'number' || next.latencyMs < 0)
      throw new RangeError(`${this.name}: latencyMs must be a number >= 0`);
    if (typeof next.errorRate !== 'number' || next.errorRate < 0 || next.errorRate > 1)
      throw new RangeError(`${this.name}: errorRate must be in [0, 1]`);
    if (typeof next.down !== 'boolean') throw new RangeError(`${this.name}: down must be true or false`);
    if (typeof next.loseReplies !== 'boolean') throw new RangeError(`${this.name}: loseReplies must be true or false`);
    this.behaviour = next;
    if (!next.down && !next.loseReplies) this.releaseHanging();
    return this.current;
  }

  /** Stops the server, dropping hanging requests. */
  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.answering++;
    try {
      await this.answer(req, res);
    } finally {
      this.answering--;
    }
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.lastDeadlineHeader = req.headers['x-request-deadline-ms'] as string | undefined;
    const body = await readJson(req);
    if (req.url === '/__admin') {
      try {
        const state = req.method === 'POST' ? this.configure(body as Partial<DependencyBehaviour>) : this.current;
        return send(res, 200, state);
      } catch (error) {
        return send(res, 400, { error: (error as Error).message });
      }
    }
    if (this.behaviour.down) return this.hang(res);
    if (this.behaviour.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.behaviour.latencyMs));
    if (Math.random() < this.behaviour.errorRate) return send(res, 503, { error: `${this.name} is overloaded` });
    this.served++;
    const answer = await this.handler(req, body);
    if (this.behaviour.loseReplies) return this.hang(res);
    send(res, answer.status, answer.body);
  }

  private hang(res: ServerResponse): void {
    this.hanging.add(res);
    res.on('close', () => {
      if (this.hanging.delete(res)) this.abandoned++;
    });
  }

  private releaseHanging(): void {
    for (const res of this.hanging) send(res, 503, { error: `${this.name} was down` });
    this.hanging.clear();
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
