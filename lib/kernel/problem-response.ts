import type { IncomingMessage, ServerResponse } from 'node:http';
import { OverloadedError, ResilienceError } from './errors';
import { resilienceProblem } from './resilience-problems';

/**
 * Answers `error` as problem+json through Node's own response API, for code
 * that runs before Nest's exception filters (the load shedder's door, the
 * inbound deadline): it works the same on every HTTP platform.
 */
export function answerWithProblem(
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
  error: ResilienceError,
): void {
  const problem = resilienceProblem(error, requestPath(req));
  const body =
    error instanceof OverloadedError
      ? { ...problem.body, reason: error.reason, priority: error.priority }
      : problem.body;
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.end(JSON.stringify(body));
}

/** The request path without its query string, which may hold secrets. */
export function requestPath(request: { originalUrl?: string; url?: string }): string | undefined {
  const url = request.originalUrl ?? request.url;
  if (url === undefined) return undefined;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * The part of an Express response and of a Fastify reply a problem answer
 * is written through: both have `status`, `header` and `send`.
 */
export interface ProblemReply {
  /** Sets the status code. */
  status(code: number): unknown;
  /** Sets a response header. */
  header(name: string, value: string): unknown;
  /** Sends the body and ends the answer. */
  send(body: string): unknown;
  /** Express: the response is a Node `ServerResponse`. */
  readonly headersSent?: boolean;
  /** Fastify: the Node response under the reply. */
  readonly raw?: ServerResponse;
}

/**
 * Writes a problem answer through an Express response or a Fastify reply;
 * when the answer has already begun (a streamed body), ends it instead.
 */
export function replyWithProblem(
  reply: ProblemReply,
  problem: { readonly status: number; readonly headers: Readonly<Record<string, string>> },
  body: string,
): void {
  const node = reply.raw ?? (reply as unknown as ServerResponse);
  if (node.headersSent) {
    node.end();
    return;
  }
  reply.status(problem.status);
  for (const header in problem.headers) reply.header(header, problem.headers[header]);
  reply.send(body);
}
