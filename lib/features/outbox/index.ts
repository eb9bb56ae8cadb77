export { Outbox } from './outbox';
export type { OutboxAddOptions } from './outbox';
export { OutboxNoTransactionError, OutboxPublishTimeoutError } from './outbox.errors';
export { isOutboxEnvelope, outboxEventId } from './outbox-event-id';
export { OUTBOX_EVENT_ID_HEADER } from './outbox-transport';
export { RedisStreamsContext } from './redis-streams-message';
export { RedisStreamsServer, REDIS_STREAMS_TRANSPORT } from './redis-streams-server';
export type {
  NestServerBase,
  RedisStreamsEventHandler,
  RedisStreamsServerClient,
  RedisStreamsServerConnection,
  RedisStreamsServerOptions,
} from './redis-streams-server';
export { OutboxRelay } from './outbox-relay';
export type { OutboxPublishResult, RelayDependencies, RelayPassResult } from './outbox-relay';
export type {
  OutboxClientProxy,
  OutboxDeliveryGuarantee,
  OutboxModuleOptions,
  OutboxPublisher,
  OutboxPublishFunction,
  OutboxRelayOptions,
  ResolvedOutboxOptions,
} from './outbox.options';
export type { OutboxEnvelope, OutboxEvent, OutboxEventState, OutboxRow, OutboxStats } from './outbox.types';
export type {
  ClaimedRow,
  FailedRowState,
  NewOutboxRow,
  OutboxListener,
  OutboxReplaySelection,
  OutboxStore,
} from './outbox-store';
export type { OutboxReplayOptions } from './outbox-replay';
export type { SqlRunner } from '../transaction/sql-runner';
export type { DurableOutboxPublisher } from './transports/delivery-guarantee';
export type { OutboxEventTarget } from './transports/event-target';
export { JetStreamPublisher } from './transports/jetstream.publisher';
export type { JetStreamConnection, JetStreamPublisherOptions } from './transports/jetstream.publisher';
export { JetStreamServer } from './transports/jetstream.server';
export type { JetStreamServerOptions, JetStreamTransport } from './transports/jetstream.server';
export { RabbitMqPublisher } from './transports/rabbitmq.publisher';
export type { RabbitMqOutboxPublisher, RabbitMqPublisherOptions } from './transports/rabbitmq.publisher';
