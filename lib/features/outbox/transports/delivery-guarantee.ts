import { OutboxPublishFunction } from '../outbox.options';

/**
 * A publisher function whose broker keeps each event until a consumer
 * acknowledges it: the durable publishers (`JetStreamPublisher`,
 * `RabbitMqPublisher`) are of this kind, and are told from at-most-once
 * transports (Redis pub/sub, NATS core, TCP, where a consumer that is down
 * or slow may never see an event) by
 * {@link DurableOutboxPublisher.deliveryGuarantee}.
 */
export interface DurableOutboxPublisher extends OutboxPublishFunction {
  /** Always `'at-least-once'`: a resolved publish is held by the broker until a consumer acknowledges it. */
  readonly deliveryGuarantee: 'at-least-once';
}

/** `publish` marked as durable. */
export function durablePublisher<T extends object>(
  publish: OutboxPublishFunction,
  extra: T,
): DurableOutboxPublisher & T {
  return Object.assign(publish, extra, { deliveryGuarantee: 'at-least-once' as const });
}
