import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Clock } from '../kernel/clock';
import { contextStorage, DEFAULT_MAX_DEADLINE_BUDGET_MS, ResilienceContext } from '../kernel/context';
import { DeadlineExceededError } from '../kernel/errors';
import { answerWithProblem } from '../kernel/problem-response';
import { INVALID_DEADLINE_HEADER } from '../kernel/resilience.messages';

const DIGITS = /^\s*\d+\s*$/;

/** The resolved `deadline` options the inbound scope reads. */
export interface InboundDeadlineOptions {
  readonly header: string;
  readonly defaultBudget?: number;
  readonly maxBudget?: number;
}

/** A Connect-style middleware, as Nest runs on Express. */
export type DeadlineMiddleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/** A callback-style Fastify `preHandler` hook, typed by the parts it uses. */
export type DeadlineHook = (
  request: { readonly raw: IncomingMessage },
  reply: { readonly raw: ServerResponse; hijack(): void },
  done: () => void,
) => void;

/** On a response: the scope of its request, until the response closes. */
const SCOPE = Symbol('resilience4nest:request-scope');

/** On a connection: the responses queued on it (pipelined) whose scopes it ends when it closes. */
const QUEUED = Symbol('resilience4nest:queued-scopes');

type ScopedResponse = ServerResponse & { [SCOPE]?: ResilienceContext; req?: IncomingMessage };
type ScopedSocket = Socket & { [QUEUED]?: Set<ScopedResponse> };

/**
 * Opens a request's scope: its deadline is the remaining time from the
 * inbound deadline header (clamped to `maxBudget`, 24 h by default), else the
 * default budget, else none. A malformed header is ignored with a warning,
 * never a crash; a request that arrives with no time left is answered 504 at
 * once. The scope's signal aborts when the deadline passes or when the
 * client goes away before its answer is finished, so retries and waits below
 * stop for a caller who is no longer there.
 *
 * It runs as a middleware on Express (after the body parsers) and as a
 * `preHandler` hook on Fastify (after body parsing, which would otherwise
 * leave the scope behind), so the whole of Nest's handling of the request —
 * guards, interceptors, pipes, the handler — runs inside the scope. The
 * module installs it only when `deadline` is configured.
 */
export class InboundDeadline {
  private warnedBadHeader = false;

  /**
   * @param options - the resolved `deadline` options
   * @param clock - the clock deadlines are measured on
   * @param warn - where a malformed header is reported (once)
   */
  constructor(
    private readonly options: InboundDeadlineOptions,
    private readonly clock: Clock,
    private readonly warn: (message: string) => void,
  ) {}

  /** The Express middleware. */
  readonly middleware: DeadlineMiddleware = (req, res, next) => {
    const scope = this.open(req, res);
    if (scope !== null) contextStorage.run(scope, next);
  };

  /** The Fastify `preHandler` hook. */
  readonly fastifyHook: DeadlineHook = (request, reply, done) => {
    const scope = this.open(request.raw, reply.raw, reply);
    if (scope !== null) contextStorage.run(scope, done);
  };

  /** The scope to run the request in; `null` when the request was answered here (no time left). */
  private open(req: IncomingMessage, res: ServerResponse, reply?: { hijack(): void }): ResilienceContext | null {
    const header = this.options.header;
    const budget = this.budgetOf(req.headers[header]);
    if (budget === 0) {
      reply?.hijack();
      answerWithProblem(
        req,
        res,
        new DeadlineExceededError('deadline', `request arrived with no time left in '${header}'`),
      );
      return null;
    }
    const scope = new ResilienceContext(
      this.clock,
      budget === undefined ? Number.POSITIVE_INFINITY : this.clock.now() + budget,
      header,
    );
    watchClient(scope, res, req.socket);
    return scope;
  }

  private budgetOf(raw: string | string[] | undefined): number | undefined {
    const { defaultBudget, maxBudget, header } = this.options;
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value === undefined) return defaultBudget;
    if (!DIGITS.test(value)) {
      if (!this.warnedBadHeader) {
        this.warnedBadHeader = true;
        this.warn(INVALID_DEADLINE_HEADER(header, value));
      }
      return defaultBudget;
    }
    const asked = Number(value);
    const ceiling = maxBudget ?? DEFAULT_MAX_DEADLINE_BUDGET_MS;
    return asked > ceiling ? ceiling : asked;
  }
}

/**
 * Ends `scope` exactly once, when its response closes (after 'finish', or
 * when the client goes away while it is written) or, for a pipelined
 * response still queued behind another, when its connection closes: Node
 * never closes such a response when the client hangs up. One listener per
 * connection, however many requests it pipelines, and no closure per request.
 */
function watchClient(scope: ResilienceContext, res: ScopedResponse, socket: ScopedSocket | null | undefined): void {
  if (socket?.closed === true) {
    // The client left before the request reached the module: nothing will be written for it.
    scope.abort(clientGone());
    return;
  }
  res[SCOPE] = scope;
  res.on('close', onResponseClose);
  // A response written on its connection closes with it; only one queued behind another may never close.
  if ((res.socket !== null && res.socket !== undefined) || typeof socket?.on !== 'function') return;
  let queued = socket[QUEUED];
  if (queued === undefined) {
    queued = socket[QUEUED] = new Set();
    socket.on('close', onConnectionClose);
  }
  queued.add(res);
}

function onResponseClose(this: ScopedResponse): void {
  end(this);
}

function onConnectionClose(this: ScopedSocket): void {
  const queued = this[QUEUED];
  if (queued === undefined) return;
  for (const res of queued) end(res);
}

/** Ends the scope of `res`: aborted when the answer was not finished (the client went away), then released. */
function end(res: ScopedResponse): void {
  const scope = res[SCOPE];
  if (scope === undefined) return;
  res[SCOPE] = undefined;
  (res.req?.socket as ScopedSocket | undefined)?.[QUEUED]?.delete(res);
  if (!res.writableFinished) scope.abort(clientGone());
  scope.dispose();
}

/** The reason a request's signal carries when its client went away. */
function clientGone(): DOMException {
  return new DOMException('the client closed the connection before the answer was finished', 'AbortError');
}
