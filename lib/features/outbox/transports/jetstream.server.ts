import type { CustomTransportStrategy, MessageHandler, Server as NestServer } from '@nestjs/microservices';
import type { ConsumerMessages, JsMsg, NatsConnection } from 'nats';
import { isObservable, lastValueFrom } from 'rxjs';
import { Duration } from '../../../config/duration';
import {
  durationOption,
  GivenOptions,
  integerOption,
  invalidOption,
  OptionReader,
} from '../../../config/option-readers';
import { loadOptionalPeer } from '../../../kernel/optional-peer';
import { JETSTREAM_HANDLER_FAILED, JETSTREAM_NO_HANDLER, JETSTREAM_STOPPED } from './transport.messages';
import { MICROSERVICES, NATS } from './transport.peers';

/** Options of {@link JetStreamServer}. */
export interface JetStreamServerOptions {
  /** The NATS servers to connect to (`nats://host:port`). */
  servers: string | string[];
  /** The JetStream stream the events are stored in; it must exist (the producer's setup adds it). */
  stream: string;
  /** The durable consumer's name: created on the stream when missing; processes that share it share the work. */
  durable: string;
  /** How long a delivered message may go unacknowledged before JetStream delivers it again. Default 30s; longer than the slowest handler. */
  ackWait?: Duration;
  /** How long after a failed handler the message is delivered again. Default 1s. */
  nakDelay?: Duration;
  /** Most messages fetched ahead of the one being handled. Default 16. */
  prefetch?: number;
}

/**
 * A Nest custom transport strategy reading a NATS JetStream durable
 * consumer, as {@link JetStreamServer} makes it.
 */
export interface JetStreamTransport {
  /** Always `'at-least-once'`: a message is acknowledged only after its handler succeeded. */
  readonly deliveryGuarantee: 'at-least-once';
  /** Connects, ensures the durable consumer and starts consuming; Nest calls it. */
  listen(callback: (error?: unknown) => void): Promise<void>;
  /** Stops consuming, lets the message in hand finish, and drains the connection; Nest calls it. */
  close(): Promise<void>;
}

/** The settings after validation, durations in ms. */
interface JetStreamServerSettings {
  readonly servers: string[];
  readonly stream: string;
  readonly durable: string;
  readonly ackWaitMs: number;
  readonly nakDelayMs: number;
  readonly prefetch: number;
}

/** Called with a NATS status event's data. */
type StatusListener = (data: unknown) => void;

const PLACE = 'JetStreamServer options';
const NANOS_PER_MS = 1_000_000;
const name: OptionReader<string> = (value, place, key) =>
  typeof value === 'string' && value.trim() !== '' ? value : invalidOption(place, key, 'a non-empty string', value);
const servers: OptionReader<string[]> = (value, place, key) => {
  const list = typeof value === 'string' ? [value] : value;
  return Array.isArray(list) && list.length > 0 && list.every((s) => typeof s === 'string' && s !== '')
    ? (list as string[])
    : invalidOption(place, key, 'a server URL or a non-empty list of them', value);
};
const positive = durationOption({ positive: true });

/**
 * A Nest custom transport on a NATS JetStream durable consumer: the
 * consumer half of {@link JetStreamPublisher}. Each message goes to the
 * `@EventPattern` handler of its pattern (the topic of the event) with a
 * `NatsContext`, so `outboxEventId` keys an `@Idempotent` handler on the
 * event id. A message is acknowledged only after its handler succeeded;
 * a handler that fails has it delivered again after `nakDelay`, and one
 * whose process dies has it delivered again after `ackWait`. A message no
 * handler takes is terminated (logged). Reconnects without limit.
 *
 * @example
 * ```ts
 * const app = await NestFactory.createMicroservice(ShippingModule, {
 *   strategy: JetStreamServer({ servers: 'nats://127.0.0.1:4222', stream: 'orders', durable: 'shipping' }),
 * });
 * await app.listen();
 * ```
 */
export function JetStreamServer(options: JetStreamServerOptions): JetStreamTransport {
  const given = new GivenOptions(options, PLACE, ['servers', 'stream', 'durable', 'ackWait', 'nakDelay', 'prefetch']);
  const required = <T>(key: string, reader: OptionReader<T>): T =>
    given.read(key, reader) ?? invalidOption(PLACE, key, 'given (it is required)', undefined);
  const settings: JetStreamServerSettings = {
    servers: required('servers', servers),
    stream: required('stream', name),
    durable: required('durable', name),
    ackWaitMs: given.read('ackWait', positive) ?? 30_000,
    nakDelayMs: given.read('nakDelay', durationOption()) ?? 1000,
    prefetch: given.read('prefetch', integerOption(1, 10_000)) ?? 16,
  };
  return new (jetStreamServerClass())(settings);
}

let serverClass: (new (settings: JetStreamServerSettings) => JetStreamTransport) | undefined;

/** The transport class, made on first use: it extends Nest's `Server`, loaded only then. */
function jetStreamServerClass(): new (settings: JetStreamServerSettings) => JetStreamTransport {
  if (serverClass !== undefined) return serverClass;
  const { NatsContext, Server } = loadOptionalPeer(MICROSERVICES, 'JetStreamServer');
  const nats = loadOptionalPeer(NATS, 'JetStreamServer');

  class JetStreamNestServer extends Server implements CustomTransportStrategy, JetStreamTransport {
    readonly deliveryGuarantee = 'at-least-once' as const;
    private connection: NatsConnection | undefined;
    private messages: ConsumerMessages | undefined;
    private consuming: Promise<void> | undefined;
    private readonly listeners: Array<{ event: string; callback: StatusListener }> = [];

    constructor(private readonly settings: JetStreamServerSettings) {
      super();
    }

    async listen(callback: (error?: unknown) => void): Promise<void> {
      try {
        await this.start();
      } catch (error) {
        await this.close();
        callback(error);
        return;
      }
      callback();
    }

    async close(): Promise<void> {
      const { messages, connection } = this;
      this.messages = this.connection = undefined;
      messages?.stop();
      // The message in hand is acknowledged (or not) before the connection goes.
      await this.consuming;
      if (connection !== undefined && !connection.isClosed()) await connection.drain();
    }

    /** Calls `callback` with the data of each NATS status event of type `event` (`disconnect`, `reconnect`, …). */
    on(...[event, callback]: Parameters<NestServer['on']>): void {
      this.listeners.push({ event, callback: callback as StatusListener });
    }

    unwrap<T>(): T {
      if (this.connection === undefined) throw new Error('JetStreamServer is not listening: no connection to unwrap');
      return this.connection as T;
    }

    private async start(): Promise<void> {
      const { servers, stream, durable, ackWaitMs, prefetch } = this.settings;
      const connection = await nats.connect({ servers, maxReconnectAttempts: -1, name: `${stream}/${durable}` });
      this.connection = connection;
      this.watch(connection).catch((error: unknown) => {
        this.logger.error(JETSTREAM_STOPPED(errorText(error)));
      });
      const manager = await connection.jetstreamManager();
      const ackWait = ackWaitMs * NANOS_PER_MS;
      const existing = await manager.consumers.info(stream, durable).catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        throw error;
      });
      if (existing === undefined)
        await manager.consumers.add(stream, {
          durable_name: durable,
          ack_policy: nats.AckPolicy.Explicit,
          deliver_policy: nats.DeliverPolicy.All,
          ack_wait: ackWait,
        });
      else if (existing.config.ack_wait !== ackWait)
        await manager.consumers.update(stream, durable, { ack_wait: ackWait });
      const consumer = await connection.jetstream().consumers.get(stream, durable);
      const messages = await consumer.consume({ max_messages: prefetch });
      this.messages = messages;
      this._status$.next('connected');
      // Ends when close() stops it; anything else that ends it (the consumer deleted…) is said.
      this.consuming = this.consume(messages).then(
        () => {
          if (this.messages === messages) this.logger.error(JETSTREAM_STOPPED('the consumer ended its messages'));
        },
        (error: unknown) => {
          this.logger.error(JETSTREAM_STOPPED(errorText(error)));
        },
      );
    }

    private async consume(messages: ConsumerMessages): Promise<void> {
      for await (const message of messages) await this.handle(message);
    }

    private async handle(message: JsMsg): Promise<void> {
      const { pattern, data } = packetIn(message);
      const handler = this.getHandlerByPattern(pattern);
      if (handler === null) {
        this.logger.warn(JETSTREAM_NO_HANDLER(pattern, this.settings.stream, this.settings.durable));
        message.term();
        return;
      }
      const context = new NatsContext([message.subject, message.headers]);
      try {
        await run(handler, data, context);
        message.ack();
      } catch (error) {
        this.logger.error(JETSTREAM_HANDLER_FAILED(pattern, errorText(error)));
        message.nak(this.settings.nakDelayMs);
      }
    }

    /** Status changes of the connection, to Nest's status stream and the `on` listeners. */
    private async watch(connection: NatsConnection): Promise<void> {
      for await (const status of connection.status()) {
        const type = String(status.type);
        if (type === 'disconnect') this._status$.next('disconnected');
        if (type === 'reconnect') this._status$.next('connected');
        for (const listener of this.listeners) if (listener.event === type) listener.callback(status.data);
      }
    }
  }
  serverClass = JetStreamNestServer;
  return serverClass;
}

/** Runs a Nest handler to its end: it rejects when the handler (or its exception filter's Observable) fails. */
async function run(handler: MessageHandler, data: unknown, context: unknown): Promise<void> {
  const result: unknown = await handler(data, context);
  if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
}

/** The `{ pattern, data }` packet a message carries; a message that is no packet is data of its subject's pattern. */
function packetIn(message: JsMsg): { pattern: string; data: unknown } {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(message.data).toString('utf8'));
  } catch {
    return { pattern: message.subject, data: Buffer.from(message.data).toString('utf8') };
  }
  const packet = decoded as { pattern?: unknown; data?: unknown } | null;
  if (packet !== null && typeof packet === 'object' && typeof packet.pattern === 'string' && 'data' in packet)
    return { pattern: packet.pattern, data: packet.data };
  return { pattern: message.subject, data: decoded };
}

function isNotFound(error: unknown): boolean {
  const { code, api_error } = (error ?? {}) as { code?: unknown; api_error?: { err_code?: unknown } };
  return code === '404' || api_error?.err_code === 10014;
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error !== null && typeof error === 'object' && 'message' in error) return String(error.message);
  return String(error);
}
