import { connect, Message } from 'amqplib';
import { OUTBOX_EVENT_ID_HEADER, RabbitMqOutboxPublisher, RabbitMqPublisher } from '../../lib';
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
    more: (broker) => {
      const event = {
        id: '0b5c6f0e-2f4e-4a51-9d0e-6c1c5a1f0002',
        topic: 'order.created',
        key: 'order-2',
        payload: { orderId: 'order-2' },
        headers: {},
        occurredAt: 1_700_000_000_000,
      };

      it('sends a persistent message with the event id as messageId and header, confirmed', async () => {
        const queue = `props_${Date.now()}`;
        const publisher = RabbitMqPublisher({ url: amqpUrl(broker()), routingKey: queue });
        const connection = await connect(amqpUrl(broker()));
        try {
          await publisher.publish(event);
          const channel = await connection.createChannel();
          const message = await channel.get(queue, { noAck: true });
          expect(message).not.toBe(false);
          const { properties, content } = message as Message;
          expect(properties).toMatchObject({
            messageId: event.id,
            deliveryMode: 2,
            headers: { [OUTBOX_EVENT_ID_HEADER]: event.id },
          });
          expect(JSON.parse(content.toString('utf8'))).toEqual({
            pattern: 'order.created',
            data: { outbox: 1, ...event },
          });
        } finally {
          await publisher.close();
          await connection.close();
        }
      }, 60_000);

      it('fails a publish no queue takes: the broker returned it', async () => {
        const publisher = RabbitMqPublisher({ url: amqpUrl(broker()), exchange: `nobody_${Date.now()}` });
        try {
          await expect(publisher.publish(event)).rejects.toThrow(
            /returned the event unrouted.*routing key 'order.created'.*NO_ROUTE/,
          );
          // Closed, it publishes nothing more.
          await publisher.close();
          await expect(publisher.publish(event)).rejects.toThrow(/was closed/);
        } finally {
          await publisher.close();
        }
      }, 60_000);
    },
  });
});
