import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  RateLimitedError,
  TimeoutExceededError,
} from '../../kernel/errors';
import { httpStatusOf, isConnectionError } from '../../kernel/error-status';

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/**
 * The default retryable set (docs/decisions/0004): timeouts, connection
 * errors and HTTP 429/502/503/504. Never our own refusals (breaker,
 * bulkhead, rate limiter) or a spent deadline: retrying those only adds load.
 */
export function isRetryableByDefault(error: unknown): boolean {
  if (
    error instanceof CallNotPermittedError ||
    error instanceof BulkheadFullError ||
    error instanceof DeadlineExceededError ||
    error instanceof RateLimitedError
  ) {
    return false;
  }
  if (error instanceof TimeoutExceededError) return true;
  const status = httpStatusOf(error);
  if (status !== undefined) return RETRYABLE_STATUS.has(status);
  return isConnectionError(error);
}
