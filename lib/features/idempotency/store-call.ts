import { Clock } from '../../kernel/clock';
import { remainingTime } from '../../kernel/context';
import { IdempotencyStoreUnavailableError } from '../../kernel/errors';
import { STORE_CALL_FAILED, STORE_CALL_TIMED_OUT } from './idempotency.messages';

/** What bounds a store call: the clock its timer runs on and `storeTimeout`. */
export interface StoreCallBounds {
  readonly clock: Clock;
  readonly storeTimeoutMs: number;
}

/**
 * Runs one store call, bounded by `storeTimeout` and, for the calls made
 * before the method runs, by the time left before the request deadline
 * (settling the key after it ran is worth the wait). A call that throws, rejects or does not
 * answer in time becomes an {@link IdempotencyStoreUnavailableError}
 * (the store's error as its `cause`); a call still running when the bound
 * passes is left to finish on its own, its answer given to `undoLate`.
 *
 * @param target - `Class.method` of the protected method, for the error
 * @param operation - what was asked of the store, for the error (`claim`, `complete`…)
 * @param withinDeadline - also bound the call by the request deadline
 * @param undoLate - receives the answer of a call that lands after the bound passed, to undo what it did
 */
export function boundedStoreCall<T>(
  bounds: StoreCallBounds,
  target: string,
  operation: string,
  call: () => PromiseLike<T>,
  withinDeadline = true,
  undoLate?: (late: T) => void,
): Promise<T> {
  const left = withinDeadline ? remainingTime() : Number.POSITIVE_INFINITY;
  const byDeadline = left < bounds.storeTimeoutMs;
  const limit = byDeadline ? left : bounds.storeTimeoutMs;
  if (!(limit > 0))
    return Promise.reject(new IdempotencyStoreUnavailableError(target, STORE_CALL_TIMED_OUT(operation, 0, true)));
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = bounds.clock.setTimeout(() => {
      timedOut = true;
      reject(new IdempotencyStoreUnavailableError(target, STORE_CALL_TIMED_OUT(operation, limit, byDeadline)));
    }, limit);
    const failed = (error: unknown) => {
      bounds.clock.clearTimeout(timer);
      reject(new IdempotencyStoreUnavailableError(target, STORE_CALL_FAILED(operation), undefined, error));
    };
    let pending: PromiseLike<T>;
    try {
      pending = call();
    } catch (error) {
      failed(error);
      return;
    }
    pending.then((value) => {
      if (timedOut) undoLate?.(value);
      bounds.clock.clearTimeout(timer);
      resolve(value);
    }, failed);
  });
}
