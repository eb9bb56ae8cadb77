import type { IncomingMessage, ServerResponse } from 'node:http';
import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { ResilienceError } from '../errors';
import { resilienceProblem } from './resilience-problems';

/**
 * Answers the module's errors over HTTP as `application/problem+json`
 * (RFC 9457) with the statuses of `RESILIENCE_PROBLEMS` and, where a
 * retry makes sense, `Retry-After`. Opt-in: register it with
 * `app.useGlobalFilters(new ResilienceExceptionFilter())` or `@UseFilters`.
 * Needs an adapter whose response is a Node `ServerResponse` (Express);
 * outside HTTP the error is rethrown unchanged.
 */
@Catch(ResilienceError)
export class ResilienceExceptionFilter implements ExceptionFilter<ResilienceError> {
  /** Writes the problem answer for `error` to the current HTTP response. */
  catch(error: ResilienceError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const http = host.switchToHttp();
    const response = http.getResponse<ServerResponse>();
    if (response.headersSent) {
      // A streamed answer has already begun; ending it is all that is left to do.
      response.end();
      return;
    }
    const problem = resilienceProblem(error, requestPath(http.getRequest<IncomingMessage & { originalUrl?: string }>()));
    response.statusCode = problem.status;
    for (const header in problem.headers) response.setHeader(header, problem.headers[header]);
    response.end(JSON.stringify(problem.body));
  }
}

/** The request path without its query string, which may hold secrets. */
function requestPath(request: IncomingMessage & { originalUrl?: string }): string | undefined {
  const url = request.originalUrl ?? request.url;
  if (url === undefined) return undefined;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
