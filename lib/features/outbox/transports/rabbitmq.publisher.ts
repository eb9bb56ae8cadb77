import type { ConfirmChannel, Message } from 'amqplib';
import { GivenOptions, invalidOption, OptionReader } from '../../../config/option-readers';
import { loadOptionalPeer } from '../../../kernel/optional-peer';
import { OutboxEvent } from '../outbox.types';
import { OUTBOX_EVENT_ID_HEADER } from '../outbox-transport';
import { DurableOutboxPublisher, durablePublisher } from './delivery-guarantee';
import { eventTargetOption, OutboxEventTarget, targetOf } from './event-target';
import { RABBITMQ_CLOSED, RABBITMQ_NACKED, RABBITMQ_RETURNED } from './transport.messages';
import { AMQPLIB, packetOf } from './transport.peers';

/** Options of {@link RabbitMqPublisher}. */
export interface RabbitMqPublisherOptions {
  /** The broker's AMQP URL (`amqp://user:password@host:5672/vhost`). */
  url: string;
  /**
   * A durable topic exchange to publish to, asserted on connect. Default:
   * the default exchange, where the routing key names a durable queue,
   * asserted before the first publish to it.
   */
  exchange?: string;
  /** The routing key of an event: a fixed one (a queue, on the default exchange), or one per event. Default: the event's topic. */
  routingKey?: OutboxEventTarget;
}

/** A {@link DurableOutboxPublisher} that holds a RabbitMQ connection. */
export interface RabbitMqOutboxPublisher extends DurableOutboxPublisher {
  /** Closes the channel and the connection; publishes after this fail. Call it at shutdown, after the application closed. */
  close(): Promise<void>;
}

const PLACE = 'RabbitMqPublisher options';
const url: OptionReader<string> = (value, place, key) =>
  typeof value === 'string' && /^amqps?:\/\//.test(value)
    ? value
    : invalidOption(place, key, 'an AMQP URL (amqp://… or amqps://…)', value);
const exchangeName: OptionReader<string> = (value, place, key) =>
  typeof value === 'string' && value !== '' ? value : invalidOption(place, key, 'a non-empty exchange name', value);

/**
 * A durable outbox publisher on RabbitMQ, consumed through Nest's own
 * `Transport.RMQ` with `noAck: false`. Events go out on a confirm channel
 * as persistent messages, `mandatory` (a message no queue takes comes back
 * and fails the publish), to a durable exchange or queue; a publish counts
 * as done only when the broker confirmed it. The message is what a Nest RMQ
 * `ClientProxy` sends (`{ pattern: topic, data: envelope }` as JSON), with
 * the event id as its AMQP `messageId` and in the
 * {@link OUTBOX_EVENT_ID_HEADER} header, so `outboxEventId` reads it from
 * an `RmqContext`. Connects on the first publish, and again after the
 * connection was lost.
 *
 * @example
 * ```ts
 * const publisher = RabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:5672', routingKey: 'orders' });
 * ResilienceModule.forRoot({ outbox: { store, publisher } });
 * ```
 */
export function RabbitMqPublisher(options: RabbitMqPublisherOptions): RabbitMqOutboxPublisher {
  const given = new GivenOptions(options, PLACE, ['url', 'exchange', 'routingKey']);
  const address = given.read('url', url) ?? invalidOption(PLACE, 'url', 'given (it is required)', undefined);
  const exchange = given.read('exchange', exchangeName);
  const routingKeyOf = targetOf(given.read('routingKey', eventTargetOption), PLACE, 'routingKey');
  const amqp = loadOptionalPeer(AMQPLIB, 'RabbitMqPublisher');
  let closed = false;
  let opening: Promise<Link> | undefined;

  /** The open channel, or a new connection and channel when there is none. */
  const link = (): Promise<Link> => {
    if (closed) return Promise.reject(new Error(RABBITMQ_CLOSED()));
    const current = (opening ??= connect());
    // A failed or lost link is forgotten, so the next publish connects again.
    const forget = () => {
      if (opening === current) opening = undefined;
    };
    current.then((open) => open.onLost(forget), forget);
    return current;
  };

  const connect = async (): Promise<Link> => {
    const connection = await amqp.connect(address);
    const channel = await connection.createConfirmChannel().catch(async (error: unknown) => {
      await connection.close().catch(() => undefined);
      throw error;
    });
    if (exchange !== undefined) await channel.assertExchange(exchange, 'topic', { durable: true });
    return new Link(connection, channel);
  };

  const publish = async (event: OutboxEvent): Promise<void> => {
    const routingKey = routingKeyOf(event);
    const open = await link();
    if (exchange === undefined) await open.assertQueue(routingKey);
    await open.publish(exchange ?? '', routingKey, event, packetOf(event.topic, { outbox: 1, ...event }));
  };

  return durablePublisher(publish, {
    close: async () => {
      closed = true;
      const current = opening;
      opening = undefined;
      await current?.then(
        (open) => open.close(),
        () => undefined,
      );
    },
  });
}

/** One connection and its confirm channel. */
class Link {
  private readonly queues = new Set<string>();
  /** Why the broker returned a message, by event id, until its confirm arrives. */
  private readonly returned = new Map<string, string>();
  private lost = false;
  private readonly lostListeners: Array<() => void> = [];

  constructor(
    private readonly connection: { close(): Promise<void>; on(event: string, listener: () => void): unknown },
    private readonly channel: ConfirmChannel,
  ) {
    const onLost = () => {
      this.lost = true;
      for (const listener of this.lostListeners.splice(0)) listener();
    };
    // Errors end in `close`; listened to so an error event never goes unhandled.
    connection.on('error', () => undefined);
    connection.on('close', onLost);
    channel.on('error', () => undefined);
    channel.on('close', onLost);
    channel.on('return', (message: Message) => {
      const id: unknown = message.properties.messageId;
      // A returned message's fields carry the broker's reply (amqplib's types leave them out).
      const { replyCode, replyText } = message.fields as { replyCode?: number; replyText?: string };
      if (typeof id === 'string') this.returned.set(id, `${replyCode} ${replyText}`);
    });
  }

  onLost(listener: () => void): void {
    if (this.lost) listener();
    else this.lostListeners.push(listener);
  }

  async assertQueue(queue: string): Promise<void> {
    if (this.queues.has(queue)) return;
    await this.channel.assertQueue(queue, { durable: true });
    this.queues.add(queue);
  }

  publish(exchange: string, routingKey: string, event: OutboxEvent, content: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.channel.publish(
        exchange,
        routingKey,
        content,
        {
          persistent: true,
          mandatory: true,
          contentType: 'application/json',
          messageId: event.id,
          headers: { [OUTBOX_EVENT_ID_HEADER]: event.id },
        },
        (error: unknown) => {
          const returned = this.returned.get(event.id);
          this.returned.delete(event.id);
          if (error !== null && error !== undefined)
            reject(new Error(RABBITMQ_NACKED(exchange, routingKey), { cause: error }));
          else if (returned !== undefined) reject(new Error(RABBITMQ_RETURNED(exchange, routingKey, returned)));
          else resolve();
        },
      );
    });
  }

  async close(): Promise<void> {
    if (this.lost) return;
    await this.channel.close().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}
