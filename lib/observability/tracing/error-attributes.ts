import type { Attributes } from '@opentelemetry/api';
import { isInjectedFault } from '../../features/fault-injection/injected-fault';
import { httpStatusOf } from '../../kernel/error-status';
import { RESILIENCE_SPAN_ATTRIBUTES as A } from '../../kernel/span-attributes';

/** OpenTelemetry's exception event and its attributes (semantic conventions). */
export const EXCEPTION_EVENT = 'exception';
const EXCEPTION_TYPE = 'exception.type';
const EXCEPTION_MESSAGE = 'exception.message';
const EXCEPTION_STACKTRACE = 'exception.stacktrace';

/** A code is an identifier (`ECONNREFUSED`, `card_declined`, `P2002`); anything longer or with spaces may be text. */
const CODE = /^[\w.:-]{1,64}$/;

/** The class name of an error, for `error.type` (a subclass that keeps `name` 'Error' is named by its class). */
export function errorType(error: unknown): string {
  if (error instanceof Error) return error.name === 'Error' ? error.constructor.name : error.name;
  return error === undefined ? 'undefined' : typeof error;
}

/** `error.type` of an event about `error`, and `resilience.fault.injected` when an injected fault threw it. */
export function errorEventAttributes(error: unknown): Attributes {
  return isInjectedFault(error)
    ? { [A.errorType]: errorType(error), [A.faultInjected]: true }
    : { [A.errorType]: errorType(error) };
}

/**
 * The attributes of the exception event an attempt span records: the
 * error's class, its `code` and its HTTP status, which carry no request
 * data; its message and stack (which may: card numbers, tokens) only with
 * `withMessage`. Marked `resilience.fault.injected` when an injected fault threw it.
 */
export function exceptionAttributes(error: unknown, withMessage: boolean): Attributes {
  const attributes: Attributes = { [EXCEPTION_TYPE]: errorType(error) };
  if (withMessage) {
    if (error instanceof Error) {
      attributes[EXCEPTION_MESSAGE] = error.message;
      if (error.stack !== undefined) attributes[EXCEPTION_STACKTRACE] = error.stack;
    } else if (typeof error === 'string') attributes[EXCEPTION_MESSAGE] = error;
  }
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if ((typeof code === 'string' && CODE.test(code)) || (typeof code === 'number' && Number.isFinite(code)))
    attributes[A.errorCode] = code;
  const status = httpStatusOf(error);
  if (status !== undefined) attributes[A.errorStatus] = status;
  if (isInjectedFault(error)) attributes[A.faultInjected] = true;
  return attributes;
}
