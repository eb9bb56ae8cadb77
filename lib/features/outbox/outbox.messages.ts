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
  `${PREFIX}: invalid configuration of outbox options: key 'publisher' must be a ClientProxy (with emit), a publisher (with publish(event), e.g. new RedisStreamsPublisher({ client })) or a function (event) => Promise<void>, got ${describe(value)}`;

export const INVALID_OUTBOX_TABLE = (table: string): string =>
  `${PREFIX}: PostgresOutboxStore: table '${table}' is not a valid name (letters, digits and _, optionally schema-qualified)`;

export const POOL_CANNOT_CONNECT = (): string =>
  `${PREFIX}: PostgresOutboxStore: LISTEN/NOTIFY needs a pg Pool (with connect()) as 'pool'; set relay.notify to false otherwise`;

export const LEASE_TOO_SHORT = (lease: number, poll: number): string =>
  `${PREFIX}: invalid configuration of outbox options: key 'relay.lease' (${lease} ms) must be longer than 'relay.pollInterval' (${poll} ms)`;

export const NO_EVENT_ID = (args: readonly unknown[]): string =>
  `${PREFIX}: outboxEventId found no outbox event id among the handler's ${args.length} argument(s) (${args.map((a) => (a === null ? 'null' : typeof a)).join(', ')}): ` +
  `no '${OUTBOX_EVENT_ID_HEADER}' header in a NATS or RabbitMQ context, no event id in a RedisStreamsContext and no outbox envelope; the message was not published by the outbox relay`;

export const RELAY_PASS_FAILED = (error: unknown): string =>
  `${PREFIX}: outbox relay pass failed (retried at the next poll): ${error instanceof Error ? error.name : describe(error)}`;

export const UNKNOWN_PARKED_EVENT = (id: string): string =>
  `${PREFIX}: no parked outbox event has id ${JSON.stringify(id)}`;

export const OUTBOX_LAG = (lagMs: number, maxLagMs: number): string =>
  `the oldest pending outbox event is ${lagMs} ms old, more than maxLag (${maxLagMs} ms)`;

export const OUTBOX_PARKED = (parked: number, maxParked: number): string =>
  `${parked} outbox events are parked, more than maxParked (${maxParked})`;

export const BAD_HEALTH_OPTION = (key: string, expected: string, value: unknown): string =>
  `${PREFIX}: ResilienceHealthIndicator.checkOutbox: option '${key}' must be ${expected}, got ${describe(value)}`;
