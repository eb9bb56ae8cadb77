import type { Span } from '@opentelemetry/api';
import { EXCEPTION_EVENT, exceptionAttributes } from './error-attributes';
import { RESILIENCE_SPAN_ATTRIBUTES } from '../../kernel/span-attributes';
import { OpenTelemetry } from './tracing.peer';
import { isThenable } from '../../kernel/thenable';

type Call = (args: unknown[]) => unknown;

/**
 * `call` with a child span around each attempt (`<target> attempt`, with
 * `resilience.attempt.number`), ended when the attempt's promise settles and
 * marked as an error when it fails, with an `exception` event giving the
 * error's class, code and status (its message and stack only with
 * `recordExceptionMessages`). Attempts of one call are told apart by
 * their argument array, which every layer passes on unchanged.
 */
export function withAttemptSpans(
  call: Call,
  target: string,
  otel: OpenTelemetry,
  recordExceptionMessages: boolean,
): Call {
  const tracer = otel.trace.getTracer('resilience4nest');
  const attempts = new WeakMap<unknown[], number>();
  const name = `${target} attempt`;
  const failed = (span: Span, error: unknown): void => {
    span.setStatus({ code: otel.SpanStatusCode.ERROR });
    span.addEvent(EXCEPTION_EVENT, exceptionAttributes(error, recordExceptionMessages));
    span.end();
  };
  return (args) => {
    const attempt = (attempts.get(args) ?? 0) + 1;
    attempts.set(args, attempt);
    return tracer.startActiveSpan(
      name,
      { attributes: { [RESILIENCE_SPAN_ATTRIBUTES.attemptNumber]: attempt } },
      (span: Span) => {
        let result: unknown;
        try {
          result = call(args);
        } catch (error) {
          failed(span, error);
          throw error;
        }
        if (!isThenable(result)) {
          span.end();
          return result;
        }
        return Promise.resolve(result).then(
          (value) => {
            span.end();
            return value;
          },
          (error: unknown) => {
            failed(span, error);
            throw error;
          },
        );
      },
    );
  };
}
