import { RabbitMqOutboxPublisher, RabbitMqPublisher } from '../../lib';
import { startRabbitMq } from '../support/rabbitmq-server';
import { serverOrSkip } from '../support/server-env';
import { durableTransportScenarios, RestartableBroker } from './durable-kit';

describe("outbox → RabbitMQ → idempotent consumer (Nest's Transport.RMQ, noAck: false)", () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;
  const amqpUrl = (broker: RestartableBroker) => `amqp://guest:guest@127.0.0.1:${broker.port}`;

  durableTransportScenarios(url, {
    name: 'RabbitMQ',
    start: (root) => startRabbitMq(root),
    prepare: async (broker, id) => {
      // One durable queue per test, named by the routing key: the default exchange routes to it.
      const publisher: RabbitMqOutboxPublisher = RabbitMqPublisher({ url: amqpUrl(broker), routingKey: id });
      return {
        publisher,
        consumerEnv: { CONSUMER_TRANSPORT: 'rabbitmq', CONSUMER_URL: amqpUrl(broker), CONSUMER_QUEUE: id },
        close: () => publisher.close(),
      };
    },
    // RabbitMQ boots an Erlang node, and the restart scenario boots it twice.
    setupMs: 240_000,
    testMs: 480_000,
  });
});
