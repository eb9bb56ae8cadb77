import { JetStreamPublisher } from './jetstream.publisher';
import { JetStreamServer } from './jetstream.server';
import { RabbitMqPublisher } from './rabbitmq.publisher';

const connection = { jetstream: () => ({ publish: async () => undefined }) };

describe('durable transports: their options', () => {
  it('mark both publishers, and the JetStream server, as at-least-once', () => {
    expect(JetStreamPublisher({ connection }).deliveryGuarantee).toBe('at-least-once');
    expect(RabbitMqPublisher({ url: 'amqp://127.0.0.1:5672' }).deliveryGuarantee).toBe('at-least-once');
    expect(JetStreamServer({ servers: 'nats://127.0.0.1:4222', stream: 's', durable: 'd' }).deliveryGuarantee).toBe(
      'at-least-once',
    );
  });

  it('refuse what is not a NATS connection, naming the key', () => {
    expect(() => JetStreamPublisher({ connection: {} as never })).toThrow(
      /JetStreamPublisher options: key 'connection' must be a connected NatsConnection/,
    );
  });

  it('refuse a subject or routing key that is neither a name nor a function', () => {
    expect(() => JetStreamPublisher({ connection, subject: 7 as never })).toThrow(
      /JetStreamPublisher options.*subject/,
    );
    expect(() => RabbitMqPublisher({ url: 'amqp://h', routingKey: '' })).toThrow(
      /RabbitMqPublisher options.*routingKey/,
    );
  });

  it('refuse a subject function that answers no subject, naming the topic', async () => {
    const publisher = JetStreamPublisher({ connection, subject: () => '' });
    await expect(
      publisher.publish({ id: 'e1', topic: 'order.created', key: null, payload: {}, headers: {}, occurredAt: 0 }),
    ).rejects.toThrow(/option 'subject' gave no subject for topic 'order.created'/);
  });

  it('refuse an URL that is not AMQP, and unknown keys', () => {
    expect(() => RabbitMqPublisher({ url: 'http://h' })).toThrow(/RabbitMqPublisher options.*url.*AMQP URL/);
    expect(() => RabbitMqPublisher({ url: 'amqp://h', queue: 'q' } as never)).toThrow(/queue/);
  });

  it('require the JetStream server its stream and durable consumer', () => {
    expect(() => JetStreamServer({ servers: 'nats://h', durable: 'd' } as never)).toThrow(
      /JetStreamServer options.*'stream'.*required/,
    );
    expect(() => JetStreamServer({ servers: [], stream: 's', durable: 'd' })).toThrow(/servers/);
    expect(() => JetStreamServer({ servers: 'nats://h', stream: 's', durable: 'd', ackWait: 'soon' })).toThrow(
      /ackWait/,
    );
  });
});
