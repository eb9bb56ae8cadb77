import { describe } from '../../config/config.messages';
import { PREFIX } from '../../kernel/resilience.messages';
import { OUTBOX_EVENT_ID_HEADER } from './outbox-transport';

export const NO_TRANSACTION = (topic: string): string =>
  `${PREFIX}: Outbox.add('${topic}') found no transaction in scope: call it inside an @Idempotent({ transactional: true }) method, ` +
  `inside an active @nestjs-cls/transactional transaction, or pass one as { tx } (the outbox never writes on its own)`;

export const BAD_TOPIC = (topic: unknown): string =>
  `${PREFIX}: Outbox.add: the topic must be a non-empty string, got ${describe(topic)}`;

export const BAD_ADD_OPTION = (topic: string, key: string, expected: string, value: unknown): string =>
  `${PREFIX}: Outbox.add('${topic}'): option '${key}' must be ${expected}, got ${describe(value)}`;

export const PAYLOAD_NOT_JSON = (topic: string, cause: string): string =>
  `${PREFIX}: Outbox.add('${topic}'): the payload cannot be written as JSON: ${cause}`;

export const OUTBOX_NOT_CONFIGURED = (feature: string): string =>
  `${PREFIX}: ${feature} needs the module option 'outbox' (outbox: { store: new PostgresOutboxStore({ pool }), publisher })`;

export const NOT_AN_OUTBOX_STORE = (value: unknown): string =>
  `${PREFIX}: invalid configuration of outbox options: key 'store' must be an outbox store (new PostgresOutboxStore({ pool })), got ${describe(value)}`;

export const NOT_A_PUBLISHER = (value: unknown): string =>
  `${PREFIX}: invalid configuration of outbox options: key 'publisher' must be a ClientProxy (with emit), a publisher (with publish(event), e.g. RedisStreamsPublisher({ client })) or a function (event) => Promise<void>, got ${describe(value)}`;

export const AT_MOST_ONCE_PUBLISHER = (client: string, why: string): string =>
  `${PREFIX}: invalid configuration of outbox options: key 'publisher' is a ${client}, which cannot confirm delivery: ${why}, ` +
  `so the relay would mark lost events sent. Use a durable publisher (RedisStreamsPublisher, JetStreamPublisher or RabbitMqPublisher), ` +
  `or set allowAtMostOnce: true in the outbox options to accept at-most-once delivery`;

export const INVALID_OUTBOX_TABLE = (table: string): string =>
  `${PREFIX}: PostgresOutboxStore: table '${table}' is not a valid name (letters, digits and _, optionally schema-qualified)`;

export const POOL_CANNOT_CONNECT = (): string =>
  `${PREFIX}: PostgresOutboxStore: LISTEN/NOTIFY needs a pg Pool (with connect()) as 'pool'; set relay.notify to false otherwise`;

export const LEASE_TOO_SHORT = (lease: number, poll: number): string =>
  `${PREFIX}: invalid configuration of outbox options: key 'relay.lease' (${lease} ms) must be longer than 'relay.pollInterval' (${poll} ms)`;

export const NO_EVENT_ID = (args: readonly unknown[]): string =>
  `${PREFIX}: outboxEventId found no outbox event id among the handler's ${args.length} argument(s) (${args.map((a) => (a === null ? 'null' : typeof a)).join(', ')}): ` +
  `no '${OUTBOX_EVENT_ID_HEADER}' header in a NATS or RabbitMQ context, no event id in a RedisStreamsContext and no outbox envelope; the message was not published by the outbox relay`;

export const RELAY_PASS_FAILED = (error: string): string =>
  `${PREFIX}: outbox relay pass failed (retried at the next poll; not logged again until a pass succeeds): ${error}`;

export const PUBLISH_FAILED = (topic: string, id: string, error: string): string =>
  `${PREFIX}: outbox relay: publishing '${topic}' failed: ${error} (event ${id}; retried with backoff; ` +
  `further failures are kept in the rows' last_error and not logged until a publish succeeds)`;

export const PUBLISH_TIMED_OUT = (topic: string, ms: number): string =>
  `${PREFIX}: outbox relay: publishing '${topic}' did not settle within ${ms} ms (relay.publishTimeout); counted as a failure of this event`;

export const OUTBOX_SCHEMA_MISMATCH = (table: string, missing: string): string =>
  `${PREFIX}: PostgresOutboxStore: table '${table}' ${missing}: create or migrate it with PostgresOutboxStore.schemaSql() (or leave createSchema on)`;

export const REPLAY_NOT_AN_OBJECT = (value: unknown): string =>
  `${PREFIX}: Outbox.replay: the selection must be an object { ids?, topic?, since? }, got ${describe(value)}`;

export const UNKNOWN_REPLAY_OPTION = (key: string, known: readonly string[]): string =>
  `${PREFIX}: Outbox.replay: unknown option '${key}' (known: ${known.join(', ')})`;

export const EMPTY_REPLAY_SELECTION = (): string =>
  `${PREFIX}: Outbox.replay: give at least one of 'ids', 'topic' or 'since' (re-sending every event sent is never implied)`;

export const BAD_REPLAY_OPTION = (key: string, expected: string, value: unknown): string =>
  `${PREFIX}: Outbox.replay: option '${key}' must be ${expected}, got ${describe(value)}`;

export const UNKNOWN_PARKED_EVENT = (id: string): string =>
  `${PREFIX}: no parked outbox event has id ${JSON.stringify(id)}`;

export const OUTBOX_LAG = (lagMs: number, maxLagMs: number): string =>
  `the oldest pending outbox event is ${lagMs} ms old, more than maxLag (${maxLagMs} ms)`;

export const OUTBOX_PARKED = (parked: number, maxParked: number): string =>
  `${parked} outbox events are parked, more than maxParked (${maxParked})`;

export const BAD_HEALTH_OPTION = (key: string, expected: string, value: unknown): string =>
  `${PREFIX}: ResilienceHealthIndicator.checkOutbox: option '${key}' must be ${expected}, got ${describe(value)}`;
