import { Duration } from '../../config/duration';
import {
  booleanOption,
  durationOption,
  GivenOptions,
  integerOption,
  invalidOption,
  OptionReader,
} from '../../config/option-readers';
import { AT_MOST_ONCE_PUBLISHER, LEASE_TOO_SHORT, NOT_A_PUBLISHER, NOT_AN_OUTBOX_STORE } from './outbox.messages';
import { OutboxEvent } from './outbox.types';
import { messageOf } from './outbox-transport';
import { isOutboxStore, OutboxStore } from './outbox-store';

/** A Nest microservices client, as the relay uses it: `emit(pattern, data)` returning an Observable. */
export interface OutboxClientProxy {
  /** `'at-least-once'` on a publisher whose broker confirms each event durably: accepted without `allowAtMostOnce`. */
  readonly deliveryGuarantee?: 'at-least-once';
  /** Emits an event; the relay subscribes and waits for the Observable to complete. */
  emit(pattern: string, data: unknown): { subscribe(observer: object): unknown };
}

/** A publisher as a plain function: resolve once the broker has the event, reject otherwise. */
export type OutboxPublishFunction = (event: OutboxEvent) => Promise<void>;

/**
 * What a publisher promises about delivery: `'at-least-once'` when a
 * publish resolves only after the broker durably accepted the event and
 * keeps it until a consumer acknowledges it; `'at-most-once'` when an
 * event can be dropped after a successful publish (nobody subscribed).
 */
export type OutboxDeliveryGuarantee = 'at-least-once' | 'at-most-once';

/**
 * A publisher object, such as `RedisStreamsPublisher`: the relay calls
 * `publish(event)` and counts the event published when it resolves.
 */
export interface OutboxPublisher {
  /** Sends one event; resolves once the broker has accepted it, rejects otherwise. */
  publish(event: OutboxEvent): Promise<void>;
  /** What the publisher promises about delivery (see {@link OutboxDeliveryGuarantee}). */
  readonly deliveryGuarantee?: OutboxDeliveryGuarantee;
}

/** Module option `outbox.relay`. */
export interface OutboxRelayOptions {
  /** Run the relay in this process. Default true. */
  enabled?: boolean;
  /** Most events claimed per pass. Default 100. */
  batchSize?: number;
  /** How often the relay looks for due events without a notification. Default 1s. */
  pollInterval?: Duration;
  /** Wake the relay on `LISTEN/NOTIFY` when an adding transaction commits. Default true. */
  notify?: boolean;
  /** How long a claimed batch is held before another relay may take it over. Default 30s. */
  lease?: Duration;
  /** Failed passes after which an event is parked. Default 10. */
  maxAttempts?: number;
  /** The `Retry` instance each publish runs through. Default `'outbox'`. */
  retry?: string;
  /** The `CircuitBreaker` instance each publish runs behind. Default `'outbox'`. */
  circuitBreaker?: string;
  /** How long one publish may take before it counts as a failure of that event. Default 30s. */
  publishTimeout?: Duration;
}

/** Module option `outbox`: the transactional outbox. */
export interface OutboxModuleOptions {
  /** Where events are kept: `new PostgresOutboxStore({ pool })`. */
  store: OutboxStore;
  /** Where events go: a publisher object (`RedisStreamsPublisher`), a Nest `ClientProxy` (events emitted as {@link OutboxEnvelope}s) or a function. */
  publisher: OutboxPublisher | OutboxClientProxy | OutboxPublishFunction;
  /** The relay's settings. */
  relay?: OutboxRelayOptions;
  /** How long published events are kept before deletion. Default 7d. */
  retention?: Duration;
  /** Create the table at bootstrap (default true); set false when migrations own it (`PostgresOutboxStore.schemaSql()`). */
  createSchema?: boolean;
  /**
   * Accept a publisher that cannot confirm delivery (a Redis pub/sub, NATS
   * core or TCP `ClientProxy`), refused otherwise: the broker drops what
   * nobody is subscribed to, so delivery is at most once. Default false.
   */
  allowAtMostOnce?: boolean;
}

/** The outbox options after validation. */
export interface ResolvedOutboxOptions {
  /** Where events are kept. */
  readonly store: OutboxStore;
  /** The publisher as a function. */
  readonly publish: OutboxPublishFunction;
  /** The relay's settings, durations in ms. */
  readonly relay: {
    readonly enabled: boolean;
    readonly batchSize: number;
    readonly pollIntervalMs: number;
    readonly notify: boolean;
    readonly leaseMs: number;
    readonly maxAttempts: number;
    readonly retry: string;
    readonly circuitBreaker: string;
    readonly publishTimeoutMs: number;
  };
  /** How long sent events are kept, in ms. */
  readonly retentionMs: number;
  /** Whether the table is created at bootstrap. */
  readonly createSchema: boolean;
}

const PLACE = 'outbox options';
const RELAY_PLACE = "outbox options 'relay'";
const positive = durationOption({ positive: true });
const instanceName: OptionReader<string> = (value, place, key) =>
  typeof value === 'string' && value.trim() !== '' ? value : invalidOption(place, key, 'an instance name', value);

/** Validates the module option `outbox`; `undefined` when it is not given. */
export function readOutboxOptions(raw: unknown): ResolvedOutboxOptions | undefined {
  if (raw === undefined) return undefined;
  const given = new GivenOptions(raw, PLACE, [
    'store',
    'publisher',
    'relay',
    'retention',
    'createSchema',
    'allowAtMostOnce',
  ]);
  const store = given.raw('store');
  if (!isOutboxStore(store)) throw new Error(NOT_AN_OUTBOX_STORE(store));
  const relay = new GivenOptions(given.raw('relay') ?? {}, RELAY_PLACE, [
    'enabled',
    'batchSize',
    'pollInterval',
    'notify',
    'lease',
    'maxAttempts',
    'retry',
    'circuitBreaker',
    'publishTimeout',
  ]);
  const pollIntervalMs = relay.read('pollInterval', positive) ?? 1000;
  const leaseMs = relay.read('lease', positive) ?? 30_000;
  if (leaseMs <= pollIntervalMs) throw new Error(LEASE_TOO_SHORT(leaseMs, pollIntervalMs));
  const publisher = given.raw('publisher');
  if (!(given.read('allowAtMostOnce', booleanOption) ?? false)) refuseAtMostOnce(publisher);
  return {
    store,
    publish: toPublishFunction(publisher),
    relay: {
      enabled: relay.read('enabled', booleanOption) ?? true,
      batchSize: relay.read('batchSize', integerOption(1, 10_000)) ?? 100,
      pollIntervalMs,
      notify: relay.read('notify', booleanOption) ?? true,
      leaseMs,
      maxAttempts: relay.read('maxAttempts', integerOption(1)) ?? 10,
      retry: relay.read('retry', instanceName) ?? 'outbox',
      circuitBreaker: relay.read('circuitBreaker', instanceName) ?? 'outbox',
      publishTimeoutMs: relay.read('publishTimeout', positive) ?? 30_000,
    },
    retentionMs: given.read('retention', positive) ?? 7 * 24 * 3_600_000,
    createSchema: given.read('createSchema', booleanOption) ?? true,
  };
}

/**
 * The publisher as a function. A publisher object gets `publish(event)`. A `ClientProxy` gets `emit(topic,
 * envelope)`, where the envelope carries the event id, key and headers
 * beside the payload (on NATS and RabbitMQ the event id is a transport
 * header too); the publish succeeds when the Observable completes.
 */
export function toPublishFunction(publisher: unknown): OutboxPublishFunction {
  if (typeof publisher === 'function') return publisher as OutboxPublishFunction;
  if (
    publisher !== null &&
    typeof publisher === 'object' &&
    typeof (publisher as OutboxClientProxy).emit === 'function'
  ) {
    const client = publisher as OutboxClientProxy;
    const message = messageOf(client);
    return (event) =>
      new Promise<void>((resolve, reject) => {
        client
          .emit(event.topic, message({ outbox: 1, ...event }))
          .subscribe({ complete: () => resolve(), error: reject });
      });
  }
  // After emit: every ClientProxy also has a publish method, the packet-level one of requests.
  if (
    publisher !== null &&
    typeof publisher === 'object' &&
    typeof (publisher as OutboxPublisher).publish === 'function'
  ) {
    const target = publisher as OutboxPublisher;
    return (event) => target.publish(event);
  }
  throw new Error(NOT_A_PUBLISHER(publisher));
}

/** Nest clients of brokers that drop what nobody is subscribed to, or never acknowledge: why each cannot confirm delivery. */
const AT_MOST_ONCE_CLIENTS: Readonly<Record<string, string>> = {
  ClientRedis: 'Redis pub/sub drops a message nobody is subscribed to at that moment, and emit still completes',
  ClientNats: 'NATS core drops a message nobody is subscribed to at that moment, and emit still completes',
  ClientTCP: 'TCP has no acknowledgement: emit completes once the bytes are written, delivered or not',
};

/**
 * Throws when `publisher` is a `ClientProxy` that cannot confirm delivery.
 * Found by the class names along its prototype chain, so
 * `@nestjs/microservices` (an optional peer) is never loaded for it. A
 * publisher declaring `deliveryGuarantee: 'at-least-once'` is accepted; a
 * function publisher is the application's to make durable.
 */
function refuseAtMostOnce(publisher: unknown): void {
  if (publisher === null || typeof publisher !== 'object') return;
  if ((publisher as { deliveryGuarantee?: unknown }).deliveryGuarantee === 'at-least-once') return;
  for (let proto: unknown = Object.getPrototypeOf(publisher); proto !== null && proto !== Object.prototype;) {
    const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string' && Object.hasOwn(AT_MOST_ONCE_CLIENTS, name))
      throw new Error(AT_MOST_ONCE_PUBLISHER(name, AT_MOST_ONCE_CLIENTS[name]));
    proto = Object.getPrototypeOf(proto);
  }
}
