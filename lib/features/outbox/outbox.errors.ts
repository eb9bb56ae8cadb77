import { ResilienceError } from '../../kernel/errors';
import { NO_TRANSACTION, PUBLISH_TIMED_OUT } from './outbox.messages';

/**
 * `Outbox.add` found no transaction to write in: not inside an
 * `@Idempotent({ transactional: true })` method, no active
 * `@nestjs-cls/transactional` transaction, and no `{ tx }` given. The
 * outbox never writes on its own, since an event committed apart from the
 * business writes is the very failure it exists to prevent.
 */
export class OutboxNoTransactionError extends ResilienceError {
  /** Always `'OUTBOX_NO_TRANSACTION'`. */
  readonly code = 'OUTBOX_NO_TRANSACTION';

  /** @param topic - the topic of the event that was not added */
  constructor(
    /** The topic of the event that was not added. */
    readonly topic: string,
  ) {
    super('outbox', NO_TRANSACTION(topic));
  }
}

/**
 * One publish did not settle within `relay.publishTimeout`: a failure of
 * that event only (kept in its `last_error`, retried with backoff, parked
 * after `maxAttempts`), so a broker that never answers holds no other key.
 */
export class OutboxPublishTimeoutError extends ResilienceError {
  /** Always `'OUTBOX_PUBLISH_TIMEOUT'`. */
  readonly code = 'OUTBOX_PUBLISH_TIMEOUT';

  /**
   * @param topic - the topic of the event whose publish timed out
   * @param timeoutMs - `relay.publishTimeout`, in ms
   */
  constructor(
    /** The topic of the event whose publish timed out. */
    readonly topic: string,
    /** `relay.publishTimeout`, in ms. */
    readonly timeoutMs: number,
  ) {
    super('outbox', PUBLISH_TIMED_OUT(topic, timeoutMs));
  }
}
