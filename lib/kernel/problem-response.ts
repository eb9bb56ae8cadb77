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
  const problem = resilienceProblem(error, (req.originalUrl ?? req.url ?? '').split('?')[0]);
  const body =
    error instanceof OverloadedError
      ? { ...problem.body, reason: error.reason, priority: error.priority }
      : problem.body;
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.end(JSON.stringify(body));
}
