import { GivenOptions } from '../../../config/option-readers';
import { loadOptionalPeer } from '../../../kernel/optional-peer';
import { OutboxEvent } from '../outbox.types';
import { OUTBOX_EVENT_ID_HEADER } from '../outbox-transport';
import { DurableOutboxPublisher, durablePublisher } from './delivery-guarantee';
import { eventTargetOption, OutboxEventTarget, targetOf } from './event-target';
import { NOT_A_NATS_CONNECTION } from './transport.messages';
import { NATS, packetOf } from './transport.peers';

/** The part of a `NatsConnection` (package `nats`) the publisher uses. */
export interface JetStreamConnection {
  /** The connection's JetStream client. */
  jetstream(): {
    publish(subject: string, data: Uint8Array, options?: { msgID?: string; headers?: unknown }): Promise<unknown>;
  };
}

/** Options of {@link JetStreamPublisher}. */
export interface JetStreamPublisherOptions {
  /** A connection from `connect()` of the `nats` package; the application opens and closes it. */
  connection: JetStreamConnection;
  /** The subject of an event: a fixed one, or one per event. Default: the event's topic. */
  subject?: OutboxEventTarget;
}

const PLACE = 'JetStreamPublisher options';

/**
 * A durable outbox publisher on NATS JetStream. Each event is published
 * with `js.publish`, and the publish counts as done only when JetStream
 * acknowledged that a stream stored it (no stream on the subject is a
 * failure, retried by the relay). The event id is the `Nats-Msg-Id`, so a
 * re-send inside the stream's duplicate window is dropped by JetStream,
 * and the {@link OUTBOX_EVENT_ID_HEADER} header, so `outboxEventId` reads it
 * from a `NatsContext`. The data is what a Nest NATS `ClientProxy` sends:
 * `{ pattern: topic, data: envelope }` as JSON. Consume it with
 * {@link JetStreamServer}.
 *
 * @example
 * ```ts
 * const connection = await connect({ servers: 'nats://127.0.0.1:4222' });
 * ResilienceModule.forRoot({ outbox: { store, publisher: JetStreamPublisher({ connection }) } });
 * ```
 */
export function JetStreamPublisher(options: JetStreamPublisherOptions): DurableOutboxPublisher {
  const given = new GivenOptions(options, PLACE, ['connection', 'subject']);
  const connection = given.raw('connection') as JetStreamConnection;
  if (connection === null || typeof connection !== 'object' || typeof connection.jetstream !== 'function')
    throw new Error(NOT_A_NATS_CONNECTION(PLACE, connection));
  const subjectOf = targetOf(given.read('subject', eventTargetOption), PLACE, 'subject');
  const nats = loadOptionalPeer(NATS, 'JetStreamPublisher');
  const js = connection.jetstream();
  return durablePublisher(async (event: OutboxEvent) => {
    const headers = nats.headers();
    headers.set(OUTBOX_EVENT_ID_HEADER, event.id);
    await js.publish(subjectOf(event), packetOf(event.topic, { outbox: 1, ...event }), { msgID: event.id, headers });
  }, {});
}
