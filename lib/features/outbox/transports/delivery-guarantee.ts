import { OutboxPublisher, OutboxPublishFunction } from '../outbox.options';

/**
 * A publisher whose broker keeps each event until a consumer acknowledges
 * it: what `RedisStreamsPublisher`, `JetStreamPublisher` and
 * `RabbitMqPublisher` make. It is told from at-most-once transports
 * (Redis pub/sub, NATS core, TCP, where a consumer that is down or slow may
 * never see an event) by {@link DurableOutboxPublisher.deliveryGuarantee}.
 */
export interface DurableOutboxPublisher extends OutboxPublisher {
  /** Always `'at-least-once'`: a resolved publish is held by the broker until a consumer acknowledges it. */
  readonly deliveryGuarantee: 'at-least-once';
}

/** `publish`, with the publisher's other members, as a durable publisher. */
export function durablePublisher<T extends object>(
  publish: OutboxPublishFunction,
  extra: T,
): DurableOutboxPublisher & T {
  return { ...extra, publish, deliveryGuarantee: 'at-least-once' };
}
