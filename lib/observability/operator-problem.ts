import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import { ProblemReply, replyWithProblem, requestPath } from '../kernel/problem-response';
import { PROBLEM_CONTENT_TYPE } from '../kernel/resilience-problems';

/** The statuses the status and outbox routes refuse a request with, and their RFC 9457 titles. */
const TITLES = { 400: 'Bad Request', 404: 'Not Found', 409: 'Conflict' } as const;

/** A status the status and outbox routes refuse a request with. */
export type OperatorRouteStatus = keyof typeof TITLES;

/**
 * A refusal by a status or outbox route (no such instance, a bad body, fault
 * injection off), answered by {@link OperatorRouteFilter} as problem+json.
 */
export class OperatorRouteError extends HttpException {
  /**
   * @param status - the HTTP status of the answer
   * @param detail - what was wrong, naming the route's argument
   */
  constructor(status: OperatorRouteStatus, detail: string) {
    super(detail, status);
    this.name = 'OperatorRouteError';
  }
}

/**
 * Answers an {@link OperatorRouteError} as an RFC 9457 problem (`about:blank`,
 * the status's title, the refusal as `detail`, the request path as
 * `instance`), on Express and Fastify alike.
 */
@Catch(OperatorRouteError)
export class OperatorRouteFilter implements ExceptionFilter<OperatorRouteError> {
  /** Writes the problem answer for `error`. */
  catch(error: OperatorRouteError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const status = error.getStatus() as OperatorRouteStatus;
    const instance = requestPath(http.getRequest<{ originalUrl?: string; url?: string }>());
    const body = {
      type: 'about:blank',
      title: TITLES[status],
      status,
      detail: error.message,
      ...(instance === undefined ? {} : { instance }),
    };
    replyWithProblem(
      http.getResponse<ProblemReply>(),
      { status, headers: { 'Content-Type': PROBLEM_CONTENT_TYPE } },
      JSON.stringify(body),
    );
  }
}
