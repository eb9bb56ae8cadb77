import { connect, NatsConnection, nanos } from 'nats';
import { join } from 'node:path';
import { JetStreamPublisher, OUTBOX_EVENT_ID_HEADER } from '../../lib';
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
    more: () => {
      const event = {
        id: '0b5c6f0e-2f4e-4a51-9d0e-6c1c5a1f0001',
        topic: 'order.created',
        key: 'order-1',
        payload: { orderId: 'order-1' },
        headers: {},
        occurredAt: 1_700_000_000_000,
      };

      it('stores the envelope with the event id as Nats-Msg-Id and header; JetStream drops a re-send', async () => {
        const nc = connection as NatsConnection;
        const manager = await nc.jetstreamManager();
        for await (const stream of manager.streams.list()) await manager.streams.delete(stream.config.name);
        await manager.streams.add({ name: 'dedup', subjects: ['order.created'], duplicate_window: nanos(120_000) });
        const publisher = JetStreamPublisher({ connection: nc });
        await publisher.publish(event);
        await publisher.publish(event);
        expect((await manager.streams.info('dedup')).state.messages).toBe(1);
        const stored = await manager.streams.getMessage('dedup', { seq: 1 });
        expect(stored.header.get('Nats-Msg-Id')).toBe(event.id);
        expect(stored.header.get(OUTBOX_EVENT_ID_HEADER)).toBe(event.id);
        expect(JSON.parse(Buffer.from(stored.data).toString('utf8'))).toEqual({
          pattern: 'order.created',
          data: { outbox: 1, ...event },
        });
      });

      it('fails a publish no stream stores', async () => {
        const publisher = JetStreamPublisher({ connection: connection as NatsConnection, subject: 'nowhere.at.all' });
        await expect(publisher.publish(event)).rejects.toThrow(/503|no responders/i);
      });
    },
  });
});
