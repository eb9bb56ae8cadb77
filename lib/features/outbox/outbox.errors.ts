import { ResilienceError } from '../../kernel/errors';
import { NO_TRANSACTION } from './outbox.messages';

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
