import type { IncomingMessage, ServerResponse } from 'node:http';
import { Clock } from './clock';
import { contextStorage, DEFAULT_MAX_DEADLINE_BUDGET_MS, ResilienceContext } from './context';
import { DeadlineExceededError } from './errors';
import { answerWithProblem } from './filter/problem-response';
import { INVALID_DEADLINE_HEADER } from './resilience.messages';

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

/**
 * Opens a request's deadline scope: the remaining time from the inbound
 * deadline header (clamped to `maxBudget`, 24 h by default), else the default
 * budget; with neither, the request gets no scope and pays one header lookup.
 * A malformed header is ignored with a warning, never a crash; a request that
 * arrives with no time left is answered 504 at once.
 *
 * It runs as a middleware on Express (after the body parsers) and as a
 * `preHandler` hook on Fastify (after body parsing, which would otherwise
 * leave the scope behind), so the whole of Nest's handling of the request —
 * guards, interceptors, pipes, the handler — runs inside the scope, and no
 * global interceptor taxes routes that do no resilience work.
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
    if (scope === undefined) next();
    else if (scope !== null) contextStorage.run(scope, next);
  };

  /** The Fastify `preHandler` hook. */
  readonly fastifyHook: DeadlineHook = (request, reply, done) => {
    const scope = this.open(request.raw, reply.raw, reply);
    if (scope === undefined) done();
    else if (scope !== null) contextStorage.run(scope, done);
  };

  /**
   * The scope to run the request in; `undefined` when no deadline applies,
   * `null` when the request was answered here (no time left).
   */
  private open(
    req: IncomingMessage,
    res: ServerResponse,
    reply?: { hijack(): void },
  ): ResilienceContext | null | undefined {
    const header = this.options.header;
    const budget = this.budgetOf(req.headers[header]);
    if (budget === undefined) return undefined;
    if (budget === 0) {
      reply?.hijack();
      answerWithProblem(
        req,
        res,
        new DeadlineExceededError('deadline', `request arrived with no time left in '${header}'`),
      );
      return null;
    }
    const scope = new ResilienceContext(this.clock, this.clock.now() + budget, header);
    // Node emits 'close' once per response, after 'finish' or when the client goes away first.
    res.once('close', () => scope.dispose());
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
