import { describe } from '../../../config/config.messages';
import { PREFIX } from '../../../kernel/resilience.messages';

export const NOT_A_NATS_CONNECTION = (place: string, value: unknown): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'connection' must be a connected NatsConnection (from connect() of the nats package), got ${describe(value)}`;

export const NO_TARGET = (place: string, key: string, topic: string, value: unknown): string =>
  `${PREFIX}: ${place}: option '${key}' gave no ${key} for topic '${topic}' (a non-empty string is needed), got ${describe(value)}`;

export const RABBITMQ_RETURNED = (exchange: string, routingKey: string, reply: string): string =>
  `${PREFIX}: RabbitMqPublisher: the broker returned the event unrouted (exchange '${exchange || '(default)'}', routing key '${routingKey}'): ${reply}; ` +
  `bind a durable queue to the exchange for this routing key, or start the consumer once so it binds its queue`;

export const RABBITMQ_NACKED = (exchange: string, routingKey: string): string =>
  `${PREFIX}: RabbitMqPublisher: the broker refused to confirm the event (exchange '${exchange || '(default)'}', routing key '${routingKey}')`;

export const RABBITMQ_CLOSED = (): string => `${PREFIX}: RabbitMqPublisher was closed; it publishes nothing more`;

export const JETSTREAM_NO_HANDLER = (pattern: string, stream: string, durable: string): string =>
  `${PREFIX}: JetStreamServer (stream '${stream}', consumer '${durable}'): no @EventPattern handler for '${pattern}'; the message is terminated`;

export const JETSTREAM_HANDLER_FAILED = (pattern: string, cause: string): string =>
  `${PREFIX}: JetStreamServer: the handler of '${pattern}' failed, the message will be delivered again: ${cause}`;

export const JETSTREAM_STOPPED = (cause: string): string =>
  `${PREFIX}: JetStreamServer stopped consuming (restart the consumer to go on; unacknowledged messages wait in the stream): ${cause}`;
