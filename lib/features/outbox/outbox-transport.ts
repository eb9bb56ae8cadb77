import { OptionalPeer, tryLoadOptionalPeer } from '../../kernel/optional-peer';
import { OutboxEnvelope } from './outbox.types';

/**
 * The transport header that carries the outbox event id on NATS and
 * RabbitMQ (where the id is also the AMQP `messageId`); `outboxEventId`
 * reads it from the handler's `NatsContext` or `RmqContext`.
 */
export const OUTBOX_EVENT_ID_HEADER = 'outbox-event-id';

/** The parts of `@nestjs/microservices` used here: two clients and their record builders. */
interface Microservices {
  ClientNats: abstract new (...args: never[]) => object;
  ClientRMQ: abstract new (...args: never[]) => object;
  NatsRecordBuilder: new (data: unknown) => { setHeaders(headers: unknown): { build(): unknown } };
  RmqRecordBuilder: new (data: unknown) => { setOptions(options: unknown): { build(): unknown } };
}

/** The part of the `nats` package used here: message headers. */
interface Nats {
  headers(): { set(name: string, value: string): void };
}

const MICROSERVICES: OptionalPeer<Microservices> = {
  name: '@nestjs/microservices',
  // Loaded only for a ClientProxy publisher, never imported: applications without microservices do not need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@nestjs/microservices'),
};

const NATS: OptionalPeer<Nats> = {
  name: 'nats',
  // Installed whenever a NATS ClientProxy works: the transport loads it too.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('nats'),
};

/**
 * How a `ClientProxy` publisher sends an envelope: on NATS as a
 * `NatsRecord` and on RabbitMQ as an `RmqRecord` carrying the event id in
 * {@link OUTBOX_EVENT_ID_HEADER} (and RabbitMQ's `messageId`); as the
 * envelope alone on transports without headers (Redis, TCP, …).
 */
export function messageOf(client: object): (envelope: OutboxEnvelope) => unknown {
  const microservices = tryLoadOptionalPeer(MICROSERVICES);
  if (microservices === undefined) return (envelope) => envelope;
  if (client instanceof microservices.ClientNats) {
    const nats = tryLoadOptionalPeer(NATS);
    if (nats === undefined) return (envelope) => envelope;
    return (envelope) => {
      const headers = nats.headers();
      headers.set(OUTBOX_EVENT_ID_HEADER, envelope.id);
      return new microservices.NatsRecordBuilder(envelope).setHeaders(headers).build();
    };
  }
  if (client instanceof microservices.ClientRMQ)
    return (envelope) =>
      new microservices.RmqRecordBuilder(envelope)
        .setOptions({ messageId: envelope.id, headers: { [OUTBOX_EVENT_ID_HEADER]: envelope.id } })
        .build();
  return (envelope) => envelope;
}
