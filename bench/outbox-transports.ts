import { Controller, INestMicroservice, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MicroserviceOptions, Payload, RmqContext, Transport } from '@nestjs/microservices';
import Redis from 'ioredis';
import { connect, NatsConnection } from 'nats';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import {
  JetStreamPublisher,
  JetStreamServer,
  OutboxEnvelope,
  OutboxPublisher,
  OutboxPublishFunction,
  RabbitMqPublisher,
  RedisStreamsPublisher,
  RedisStreamsServer,
} from '../lib';
import { startNats } from '../test/support/nats-server';
import { startRabbitMq } from '../test/support/rabbitmq-server';
import { startRedis } from '../test/support/redis-server';

/** The topic the bench's events carry: the stream, subject and pattern the consumer listens on. */
export const BENCH_TOPIC = 'bench';
/** The RabbitMQ queue: the publisher routes every event to it through the default exchange. */
const QUEUE = 'bench_outbox';
/** Messages a consumer holds unacknowledged at once, on each transport (JetStreamServer's default). */
const PREFETCH = 16;

/** A broker with a consumer listening on it, and the publisher the relay uses to reach it. */
export interface OpenTransport {
  readonly publisher: OutboxPublisher | OutboxPublishFunction;
  /** Closes the consumer, the publisher's connection and the broker. */
  close(): Promise<void>;
}

/** A durable transport under the bench: which server it needs, and how to bring it up with a consumer. */
export interface DurableTransport {
  readonly name: string;
  /** The server's executable, as the test support starts it (its environment variable honoured). */
  readonly bin: string;
  /**
   * Starts the broker (its files under `root`) and a Nest consumer whose
   * handler hands each event id to `received`, then acknowledges it.
   */
  open(root: string, received: (id: string) => void): Promise<OpenTransport>;
}

/** The consumer: one `@EventPattern` handler that reports the event and, on RabbitMQ, acknowledges it itself. */
function consumerModule(received: (id: string) => void): Type {
  @Controller()
  class BenchConsumer {
    @EventPattern(BENCH_TOPIC)
    async onEvent(@Payload() event: OutboxEnvelope<unknown>, @Ctx() context: unknown): Promise<void> {
      received(event.id);
      // Redis Streams and JetStream acknowledge when the handler returns; Transport.RMQ with noAck: false leaves it to us.
      if (context instanceof RmqContext)
        (context.getChannelRef() as { ack(m: unknown): void }).ack(context.getMessage());
    }
  }
  @Module({ controllers: [BenchConsumer] })
  class BenchConsumerModule {}
  return BenchConsumerModule;
}

async function listen(received: (id: string) => void, options: MicroserviceOptions): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(consumerModule(received), {
    ...options,
    logger: false,
  });
  await app.listen();
  return app;
}

/**
 * Redis with its append-only file fsynced once a second (Redis's default
 * policy for the file), a consumer group read by `RedisStreamsServer`.
 */
const redisStreams: DurableTransport = {
  name: 'Redis Streams',
  bin: process.env.REDIS_SERVER_BIN ?? 'redis-server',
  open: async (root, received) => {
    const server = await startRedis(root, { appendOnly: true, appendFsync: 'everysec' });
    const producer = new Redis(server.url);
    const consumer = new Redis(server.url);
    const app = await listen(received, {
      strategy: RedisStreamsServer({ client: consumer, group: 'bench', consumer: 'bench-1', count: PREFETCH }),
    });
    return {
      publisher: RedisStreamsPublisher({ client: producer }),
      close: async () => {
        await app.close();
        producer.disconnect();
        consumer.disconnect();
        await server.stop();
      },
    };
  },
};

/** NATS with JetStream's file store, one stream for the topic, a durable consumer read by `JetStreamServer`. */
const jetStream: DurableTransport = {
  name: 'NATS JetStream',
  bin: process.env.NATS_SERVER_BIN ?? 'nats-server',
  open: async (root, received) => {
    const server = await startNats({ jetStream: join(root, 'jetstream') });
    const url = `nats://127.0.0.1:${server.port}`;
    let connection: NatsConnection | undefined;
    let app: INestMicroservice | undefined;
    try {
      connection = await connect({ servers: url });
      const manager = await connection.jetstreamManager();
      await manager.streams.add({ name: 'bench', subjects: [BENCH_TOPIC] });
      app = await listen(received, {
        strategy: JetStreamServer({ servers: url, stream: 'bench', durable: 'bench', prefetch: PREFETCH }),
      });
    } catch (error) {
      await connection?.close();
      await server.stop();
      throw error;
    }
    const opened = connection;
    const consumer = app;
    return {
      publisher: JetStreamPublisher({ connection: opened }),
      close: async () => {
        await consumer.close();
        await opened.close();
        await server.stop();
      },
    };
  },
};

/** A RabbitMQ node, one durable queue, persistent messages confirmed; consumed by Nest's `Transport.RMQ` with `noAck: false`. */
const rabbitMq: DurableTransport = {
  name: 'RabbitMQ',
  bin: process.env.RABBITMQ_SERVER_BIN ?? '/usr/lib/rabbitmq/bin/rabbitmq-server',
  open: async (root, received) => {
    const server = await startRabbitMq(root);
    const url = `amqp://guest:guest@127.0.0.1:${server.port}`;
    const publisher = RabbitMqPublisher({ url, routingKey: QUEUE });
    let app: INestMicroservice;
    try {
      app = await listen(received, {
        transport: Transport.RMQ,
        options: {
          urls: [url],
          queue: QUEUE,
          queueOptions: { durable: true },
          noAck: false,
          prefetchCount: PREFETCH,
        },
      });
    } catch (error) {
      await publisher.close();
      await server.stop();
      throw error;
    }
    return {
      publisher,
      close: async () => {
        await app.close();
        await publisher.close();
        await server.stop();
      },
    };
  },
};

/** The durable transports the outbox bench measures, in the order of its table. */
export const DURABLE_TRANSPORTS: readonly DurableTransport[] = [redisStreams, jetStream, rabbitMq];

/** Why `bin` cannot be run (`"redis-server not found"`), or `undefined` when it can: a path, or a name on PATH. */
export async function missingServer(bin: string): Promise<string | undefined> {
  const executable = (path: string) =>
    access(path, constants.X_OK).then(
      () => true,
      () => false,
    );
  const candidates = bin.includes('/')
    ? [bin]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, bin));
  for (const candidate of candidates) if (await executable(candidate)) return undefined;
  return `${bin.split('/').pop()} not found`;
}
