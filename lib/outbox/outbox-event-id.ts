import { NO_EVENT_ID } from './outbox.messages';
import { OutboxEnvelope } from './outbox.types';

/** Whether `value` is the data a `ClientProxy` publisher emitted: an {@link OutboxEnvelope}. */
export function isOutboxEnvelope(value: unknown): value is OutboxEnvelope {
  if (value === null || typeof value !== 'object') return false;
  const envelope = value as Partial<OutboxEnvelope>;
  return envelope.outbox === 1 && typeof envelope.id === 'string' && typeof envelope.topic === 'string';
}

/**
 * The outbox event id of a message a handler received: the `id` of the
 * {@link OutboxEnvelope} among the handler's arguments (its `@Payload()`).
 * Written to take a handler's arguments as they are, so it is the whole
 * key function of an idempotent consumer: the relay may publish an event
 * twice, the handler's effect happens once.
 *
 * @throws Error when no argument is an outbox envelope
 * @example
 * ```ts
 * @EventPattern('payment.captured')
 * @Idempotent({ key: outboxEventId })
 * async onCaptured(@Payload() event: OutboxEnvelope<{ paymentId: string }>) { … }
 * ```
 */
export function outboxEventId(...args: unknown[]): string {
  for (const arg of args) if (isOutboxEnvelope(arg)) return arg.id;
  throw new Error(NO_EVENT_ID(args));
}
