import { connect, NatsConnection, nanos } from 'nats';
import { join } from 'node:path';
import { JetStreamPublisher } from '../../lib';
import { startNats } from '../support/nats-server';
import { serverOrSkip } from '../support/server-env';
import { durableTransportScenarios, RestartableBroker } from './durable-kit';

describe('outbox → NATS JetStream → idempotent consumer (JetStreamServer)', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;
  let connection: NatsConnection | undefined;

  durableTransportScenarios(url, {
    name: 'JetStream',
    start: async (root) => {
      const broker = await startNats({ jetStream: join(root, 'jetstream') });
      connection = await connect({ servers: `nats://127.0.0.1:${broker.port}`, maxReconnectAttempts: -1 });
      return {
        port: broker.port,
        restart: () => broker.restart(),
        stop: async () => {
          await connection?.close();
          await broker.stop();
        },
      };
    },
    prepare: async (broker: RestartableBroker, id) => {
      const nc = connection as NatsConnection;
      const manager = await nc.jetstreamManager();
      // One stream per test holds `order.created`: a stream of an earlier test is removed first.
      for await (const stream of manager.streams.list()) await manager.streams.delete(stream.config.name);
      await manager.streams.add({ name: id, subjects: ['order.created'], duplicate_window: nanos(120_000) });
      return {
        publisher: JetStreamPublisher({ connection: nc }),
        consumerEnv: {
          CONSUMER_TRANSPORT: 'jetstream',
          CONSUMER_URL: `nats://127.0.0.1:${broker.port}`,
          CONSUMER_STREAM: id,
          CONSUMER_DURABLE: 'shipping',
          CONSUMER_ACK_WAIT: '2s',
        },
        close: async () => undefined,
      };
    },
    setupMs: 60_000,
    testMs: 400_000,
  });
});
