import type * as Amqplib from 'amqplib';
import type * as Microservices from '@nestjs/microservices';
import type * as Nats from 'nats';
import { OptionalPeer } from '../../../kernel/optional-peer';

/** `@nestjs/microservices`: the base of the JetStream transport and its context. */
export const MICROSERVICES: OptionalPeer<typeof Microservices> = {
  name: '@nestjs/microservices',
  // Loaded when a JetStreamServer is made, never imported: applications without microservices do not need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@nestjs/microservices'),
};

/** `nats`: JetStream's client. */
export const NATS: OptionalPeer<typeof Nats> = {
  name: 'nats',
  // Loaded by the JetStream publisher and server only.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('nats'),
};

/** `amqplib`: RabbitMQ's client. */
export const AMQPLIB: OptionalPeer<typeof Amqplib> = {
  name: 'amqplib',
  // Loaded by the RabbitMQ publisher only.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('amqplib'),
};

/**
 * The message a Nest `ClientProxy` sends for `emit(topic, envelope)`, which
 * Nest's NATS and RabbitMQ servers and the JetStream server read:
 * `{ pattern, data }` as JSON.
 */
export function packetOf(topic: string, data: unknown): Buffer {
  return Buffer.from(JSON.stringify({ pattern: topic, data }));
}
