export { Outbox } from './outbox';
export type { OutboxAddOptions } from './outbox';
export { OutboxNoTransactionError } from './outbox.errors';
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
export { DEFAULT_OUTBOX_TABLE, PostgresOutboxStore } from './postgres-outbox-store';
export type {
  ClaimedRow,
  FailedRowState,
  NewOutboxRow,
  OutboxListener,
  PostgresOutboxStoreOptions,
} from './postgres-outbox-store';
export type { SqlRunner } from '../transaction/sql-runner';
