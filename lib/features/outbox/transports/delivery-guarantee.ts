import { OutboxPublishFunction } from '../outbox.options';

/**
 * What a publisher promises about an event once its publish resolved:
 * `'at-least-once'` when a broker durably holds it until a consumer
 * acknowledges it; `'at-most-once'` when a consumer that is down or slow
 * may never see it (Redis pub/sub, NATS core, TCP).
 */
export type OutboxDeliveryGuarantee = 'at-least-once' | 'at-most-once';

/**
 * A publisher function whose broker keeps each event until a consumer
 * acknowledges it: the durable publishers (`JetStreamPublisher`,
 * `RabbitMqPublisher`) are of this kind, and the outbox tells them from
 * at-most-once transports by {@link DurableOutboxPublisher.deliveryGuarantee}.
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
