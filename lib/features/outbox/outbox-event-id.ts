import { NO_EVENT_ID } from './outbox.messages';
import { OutboxEnvelope } from './outbox.types';
import { OUTBOX_EVENT_ID_HEADER } from './outbox-transport';
import { RedisStreamsContext } from './redis-streams-message';

/** Whether `value` is the data a `ClientProxy` publisher emitted: an {@link OutboxEnvelope}. */
export function isOutboxEnvelope(value: unknown): value is OutboxEnvelope {
  if (value === null || typeof value !== 'object') return false;
  const envelope = value as Partial<OutboxEnvelope>;
  return envelope.outbox === 1 && typeof envelope.id === 'string' && typeof envelope.topic === 'string';
}

/**
 * The outbox event id of a message a handler received: the
 * {@link OUTBOX_EVENT_ID_HEADER} transport header when the handler takes
 * its `NatsContext` or `RmqContext` (`@Ctx()`), the entry's `id` field
 * when it takes a {@link RedisStreamsContext}, else the `id` of the
 * {@link OutboxEnvelope} among its arguments (its `@Payload()`).
 * Written to take a handler's arguments as they are, so it is the whole
 * key function of an idempotent consumer: the relay may publish an event
 * twice, the handler's effect happens once.
 *
 * @throws Error when no argument carries an outbox event id
 * @example
 * ```ts
 * @EventPattern('payment.captured')
 * @Idempotent({ key: outboxEventId })
 * async onCaptured(@Payload() event: OutboxEnvelope<{ paymentId: string }>, @Ctx() context: unknown) { … }
 * ```
 */
export function outboxEventId(...args: unknown[]): string {
  for (const arg of args) {
    const id = headerOf(arg);
    if (id !== undefined) return id;
  }
  for (const arg of args) if (isOutboxEnvelope(arg)) return arg.id;
  throw new Error(NO_EVENT_ID(args));
}

/** What a `NatsContext` or an `RmqContext` offers, read without loading `@nestjs/microservices`. */
interface TransportContext {
  getSubject?: () => unknown;
  getHeaders?: () => { get?: (name: string) => unknown } | undefined;
  getChannelRef?: () => unknown;
  getMessage?: () => { properties?: { headers?: Record<string, unknown> } } | undefined;
}

/** The event id of a Redis Streams context, or the event id header of a NATS or RabbitMQ context; `undefined` for anything else, or without the header. */
function headerOf(arg: unknown): string | undefined {
  if (arg instanceof RedisStreamsContext) return arg.getOutboxEventId();
  if (arg === null || typeof arg !== 'object') return undefined;
  const context = arg as TransportContext;
  let id: unknown;
  if (typeof context.getSubject === 'function' && typeof context.getHeaders === 'function')
    id = context.getHeaders()?.get?.(OUTBOX_EVENT_ID_HEADER);
  else if (typeof context.getChannelRef === 'function' && typeof context.getMessage === 'function')
    id = context.getMessage()?.properties?.headers?.[OUTBOX_EVENT_ID_HEADER];
  // NATS answers '' for a header that is not there.
  return typeof id === 'string' && id !== '' ? id : undefined;
}
