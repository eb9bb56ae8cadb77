import { retryAfterOf } from './error-status';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyQuotaExceededError,
  IdempotencyKeyReuseError,
  IdempotencyOutcomeUnknownError,
  IdempotencyStoreUnavailableError,
  MaxRetriesExceededError,
  OverloadedError,
  RateLimitedError,
  ResilienceError,
  TimeoutExceededError,
  TooManyInstancesError,
} from './errors';

/** The `code` of every error this module raises. */
export type ResilienceErrorCode =
  | CallNotPermittedError['code']
  | BulkheadFullError['code']
  | TimeoutExceededError['code']
  | DeadlineExceededError['code']
  | RateLimitedError['code']
  | OverloadedError['code']
  | IdempotencyKeyMissingError['code']
  | IdempotencyKeyInProgressError['code']
  | IdempotencyKeyReuseError['code']
  | IdempotencyKeyQuotaExceededError['code']
  | IdempotencyOutcomeUnknownError['code']
  | IdempotencyStoreUnavailableError['code']
  | MaxRetriesExceededError['code']
  | TooManyInstancesError['code'];

/** How one kind of resilience error is answered over HTTP. */
export interface ResilienceProblem {
  /** HTTP status code. */
  readonly status: number;
  /** RFC 9457 problem type URI, distinct per kind. */
  readonly type: string;
  /** RFC 9457 title: a short summary that does not change between occurrences. */
  readonly title: string;
  /** Whether the answer carries `Retry-After`. */
  readonly retryAfter: boolean;
}

const TYPE_BASE = 'https://resilience4nest.dev/problems/';

/** The `Content-Type` of every problem+json answer of this module, whichever code path writes it. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/**
 * The HTTP answer for each error kind, keyed by the error's `code` so that
 * subclasses inherit their parent's answer. Shared by
 * `ResilienceExceptionFilter` and anything else that answers for these
 * errors itself (an idempotency interceptor, for one).
 */
export const RESILIENCE_PROBLEMS: Readonly<Record<ResilienceErrorCode, ResilienceProblem>> = Object.freeze({
  CALL_NOT_PERMITTED: {
    status: 503,
    type: `${TYPE_BASE}call-not-permitted`,
    title: 'Call not permitted by circuit breaker',
    retryAfter: true,
  },
  BULKHEAD_FULL: { status: 503, type: `${TYPE_BASE}bulkhead-full`, title: 'Bulkhead full', retryAfter: true },
  TIMEOUT_EXCEEDED: { status: 504, type: `${TYPE_BASE}timeout-exceeded`, title: 'Timeout exceeded', retryAfter: false },
  DEADLINE_EXCEEDED: {
    status: 504,
    type: `${TYPE_BASE}deadline-exceeded`,
    title: 'Deadline exceeded',
    retryAfter: false,
  },
  RATE_LIMITED: { status: 429, type: `${TYPE_BASE}rate-limited`, title: 'Rate limit exceeded', retryAfter: true },
  OVERLOADED: { status: 503, type: `${TYPE_BASE}overloaded`, title: 'Server overloaded', retryAfter: true },
  IDEMPOTENCY_KEY_MISSING: {
    status: 400,
    type: `${TYPE_BASE}idempotency-key-missing`,
    title: 'Idempotency-Key missing or malformed',
    retryAfter: false,
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    status: 409,
    type: `${TYPE_BASE}idempotency-key-in-progress`,
    title: 'Request with this Idempotency-Key still in progress',
    retryAfter: true,
  },
  IDEMPOTENCY_KEY_REUSE: {
    status: 422,
    type: `${TYPE_BASE}idempotency-key-reuse`,
    title: 'Idempotency-Key reused with a different request',
    retryAfter: false,
  },
  IDEMPOTENCY_KEY_QUOTA_EXCEEDED: {
    status: 429,
    type: `${TYPE_BASE}idempotency-key-quota-exceeded`,
    title: 'Too many idempotency keys held by this caller',
    retryAfter: true,
  },
  IDEMPOTENCY_OUTCOME_UNKNOWN: {
    status: 500,
    type: `${TYPE_BASE}idempotency-outcome-unknown`,
    title: 'Outcome of the earlier request with this Idempotency-Key unknown',
    retryAfter: false,
  },
  IDEMPOTENCY_STORE_UNAVAILABLE: {
    status: 503,
    type: `${TYPE_BASE}idempotency-store-unavailable`,
    title: 'Idempotency store unavailable',
    retryAfter: true,
  },
  MAX_RETRIES_EXCEEDED: {
    status: 502,
    type: `${TYPE_BASE}max-retries-exceeded`,
    title: 'Retries exhausted',
    retryAfter: false,
  },
  // Nothing ran; the cap holds until the application restarts, so no Retry-After invites a client back.
  TOO_MANY_INSTANCES: {
    status: 503,
    type: `${TYPE_BASE}too-many-instances`,
    title: 'Too many policy instances',
    retryAfter: false,
  },
});

/** The answer for a `ResilienceError` whose `code` is not in {@link RESILIENCE_PROBLEMS}. */
const UNKNOWN_PROBLEM: ResilienceProblem = {
  status: 500,
  type: 'about:blank',
  title: 'Internal Server Error',
  retryAfter: false,
};

/** `Retry-After` in seconds when the error gives no hint. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/** An RFC 9457 problem details body, with the policy instance as `name`. */
export interface ProblemDetails {
  /** Problem type URI, distinct per error kind (`about:blank` for an unknown kind). */
  readonly type: string;
  /** A short summary of the kind, the same for every occurrence. */
  readonly title: string;
  /** The HTTP status code, repeated from the response. */
  readonly status: number;
  /** The error's message, naming the policy instance. */
  readonly detail: string;
  /** The request path the problem occurred on. */
  readonly instance?: string;
  /** The policy instance that raised the error. */
  readonly name: string;
}

/** A complete HTTP answer: status, headers and body. */
export interface ProblemResponse {
  /** The HTTP status code. */
  readonly status: number;
  /** Response headers: `Content-Type: application/problem+json; charset=utf-8`, and `Retry-After` (seconds) for retryable kinds. */
  readonly headers: Readonly<Record<string, string>>;
  /** The problem details body. */
  readonly body: ProblemDetails;
}

/**
 * Whole seconds for `Retry-After`: rounded up (never invite a client back
 * early), at least 1, `DEFAULT_RETRY_AFTER_SECONDS` (1) without a hint.
 */
export function retryAfterSeconds(ms: number | undefined): number {
  return ms === undefined ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The `application/problem+json` answer for `error`.
 *
 * @param error - the error to answer for
 * @param instance - the request path, reported as the problem's `instance`
 */
export function resilienceProblem(error: ResilienceError, instance?: string): ProblemResponse {
  const problem = Object.prototype.hasOwnProperty.call(RESILIENCE_PROBLEMS, error.code)
    ? RESILIENCE_PROBLEMS[error.code as ResilienceErrorCode]
    : UNKNOWN_PROBLEM;
  const headers: Record<string, string> = { 'Content-Type': PROBLEM_CONTENT_TYPE };
  if (problem.retryAfter) headers['Retry-After'] = String(retryAfterSeconds(retryAfterOf(error)));
  const body: ProblemDetails = {
    type: problem.type,
    title: problem.title,
    status: problem.status,
    detail: error.message,
    ...(instance === undefined ? {} : { instance }),
    name: error.instance,
  };
  return { status: problem.status, headers, body };
}

/**
 * The error a microservice client receives for a `ResilienceError` (the
 * RPC counterpart of the problem answer): the same `code` as the error,
 * its message, and, for the kinds answered over HTTP with `Retry-After`,
 * the delay in ms (the error's own hint, else `DEFAULT_RETRY_AFTER_SECONDS` (1)).
 */
export interface ResilienceRpcError {
  /** Always `'error'`, as in Nest's own RPC errors. */
  readonly status: 'error';
  /** The error's `code`, e.g. `CALL_NOT_PERMITTED`. */
  readonly code: string;
  /** The error's message, naming the policy instance. */
  readonly message: string;
  /** When to try again, in ms; only for the kinds answered over HTTP with `Retry-After`. */
  readonly retryAfterMs?: number;
}

/** The RPC error for `error`, as `ResilienceExceptionFilter` sends it to microservice clients. */
export function resilienceRpcError(error: ResilienceError): ResilienceRpcError {
  const known = Object.prototype.hasOwnProperty.call(RESILIENCE_PROBLEMS, error.code);
  const rpcError: ResilienceRpcError = { status: 'error', code: error.code, message: error.message };
  if (!known || !RESILIENCE_PROBLEMS[error.code as ResilienceErrorCode].retryAfter) return rpcError;
  return { ...rpcError, retryAfterMs: retryAfterOf(error) ?? DEFAULT_RETRY_AFTER_SECONDS * 1000 };
}
