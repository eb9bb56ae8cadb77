import { ArgumentsHost, Catch, ExceptionFilter, HttpServer, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Observable, throwError } from 'rxjs';
import { CallerAbortError } from '../../kernel/cancellation';
import { ResilienceError } from '../../kernel/errors';
import { ProblemReply, replyWithProblem, requestPath } from '../../kernel/problem-response';
import { resilienceProblem, resilienceRpcError } from '../../kernel/resilience-problems';

/**
 * Answers the module's errors where they surface:
 * - over HTTP (Express or Fastify), as `application/problem+json`
 *   (RFC 9457) with the statuses of `RESILIENCE_PROBLEMS` and, where a
 *   retry makes sense, `Retry-After`;
 * - in a microservice handler, as the RPC error
 *   `{ status: 'error', code, message, retryAfterMs }` the client receives;
 * - anywhere else (GraphQL, WebSockets), it rethrows the error unchanged.
 *
 * A call its caller cancelled rejects with an `AbortError` whose `cause` is
 * the caller's reason; when that reason is one of this module's errors (a
 * request deadline that passed: `DeadlineExceededError`), the filter answers
 * for it (504), and rethrows any other cancellation unchanged.
 *
 * Opt-in: `app.useGlobalFilters(new ResilienceExceptionFilter())`,
 * `{ provide: APP_FILTER, useClass: ResilienceExceptionFilter }` or
 * `@UseFilters(ResilienceExceptionFilter)`; on a microservice,
 * `useGlobalFilters` on it, or `connectMicroservice(options, { inheritAppConfig: true })`.
 * It writes through the platform's HTTP adapter (injected, or given to the
 * constructor); created without one, through the `status`, `header` and
 * `send` that Express responses and Fastify replies share.
 */
@Catch(ResilienceError, CallerAbortError)
export class ResilienceExceptionFilter implements ExceptionFilter<ResilienceError | DOMException> {
  /** @param adapterHost - the application's `HttpAdapterHost` (injected when Nest creates the filter) */
  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {}

  /** Answers for `error` in the context `host` is of. */
  catch(caught: ResilienceError | DOMException, host: ArgumentsHost): void | Observable<never> {
    const error = caught instanceof ResilienceError ? caught : (caught as { cause?: unknown }).cause;
    if (!(error instanceof ResilienceError)) throw caught;
    const type = host.getType();
    if (type === 'http') return this.answerHttp(error, host);
    if (type === 'rpc') return throwError(() => resilienceRpcError(error));
    throw error;
  }

  private answerHttp(error: ResilienceError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<ProblemReply>();
    const problem = resilienceProblem(error, requestPath(http.getRequest<{ originalUrl?: string; url?: string }>()));
    const body = JSON.stringify(problem.body);
    const adapter: HttpServer | undefined = this.adapterHost?.httpAdapter;
    if (adapter !== undefined) {
      // A streamed answer has already begun; ending it is all that is left to do.
      if (adapter.isHeadersSent(response)) {
        adapter.end(response);
        return;
      }
      for (const header in problem.headers) adapter.setHeader(response, header, problem.headers[header]);
      adapter.reply(response, body, problem.status);
      return;
    }
    replyWithProblem(response, problem, body);
  }
}
