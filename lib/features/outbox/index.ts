export { Outbox } from './outbox';
export type { OutboxAddOptions } from './outbox';
export { OutboxNoTransactionError, OutboxPublishTimeoutError } from './outbox.errors';
export { isOutboxEnvelope, outboxEventId } from './outbox-event-id';
export { OUTBOX_EVENT_ID_HEADER } from './outbox-transport';
export { OutboxRelay } from './outbox-relay';
export type { OutboxPublishResult, RelayDependencies, RelayPassResult } from './outbox-relay';
export type {
  OutboxClientProxy,
  OutboxModuleOptions,
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
