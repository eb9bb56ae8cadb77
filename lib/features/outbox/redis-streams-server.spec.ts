import { Server } from '@nestjs/microservices';
import { REDIS_STREAMS_TRANSPORT, RedisStreamsServer, RedisStreamsServerClient } from './redis-streams-server';
import { streamEntryFields } from './redis-streams-message';

const client = {
  call: async () => null,
  disconnect: () => undefined,
  duplicate: () => client,
} as RedisStreamsServerClient;

describe('RedisStreamsServer options', () => {
  it('is a Nest Server, with its own transport id', () => {
    const server = RedisStreamsServer({ client, group: 'shipping', consumer: 'c-1' });
    expect(server).toBeInstanceOf(Server);
    expect(server.transportId).toBe(REDIS_STREAMS_TRANSPORT);
  });

  it('refuses bad options, naming the key', () => {
    expect(() => RedisStreamsServer({ client: {} as never, group: 'g', consumer: 'c' })).toThrow(
      /key 'client' must be an ioredis client/,
    );
    expect(() => RedisStreamsServer({ client, group: 'g' } as never)).toThrow(/'group' and 'consumer' are required/);
    expect(() => RedisStreamsServer({ client, group: ' ', consumer: 'c' })).toThrow(
      /key 'group' must be a non-empty string/,
    );
    expect(() => RedisStreamsServer({ client, group: 'g', consumer: 'c', claimIdle: 'soon' })).toThrow(/claimIdle/);
    expect(() => RedisStreamsServer({ client, group: 'g', consumer: 'c', streams: [] })).toThrow(/key 'streams'/);
    expect(() => RedisStreamsServer({ client, group: 'g', consumer: 'c', count: 0 })).toThrow(/count/);
    expect(() => RedisStreamsServer({ client, group: 'g', consumer: 'c', claimIdel: '1s' } as never)).toThrow(
      /claimIdel/,
    );
  });
});

describe('RedisStreamsServer acknowledgements', () => {
  const event = (id: string) => ({ id, topic: 'orders', key: null, payload: {}, headers: {}, occurredAt: 0 });

  /** A connection that answers one read of two entries, then blocks until disconnected; XACKs wait for `ackAll`. */
  function fakeRedis() {
    const acks: string[] = [];
    const waitingAcks: Array<() => void> = [];
    let reads = 0;
    let endRead = (): void => undefined;
    const connection: RedisStreamsServerClient = {
      call: async (command: string, ...args: (string | number)[]) => {
        if (command === 'XREADGROUP') {
          if (reads++ === 0)
            return [
              [
                'orders',
                [
                  ['1-0', streamEntryFields(event('e1'))],
                  ['2-0', streamEntryFields(event('e2'))],
                ],
              ],
            ];
          return new Promise((_resolve, reject) => (endRead = () => reject(new Error('disconnected'))));
        }
        if (command === 'XACK') {
          await new Promise<void>((resolve) => waitingAcks.push(resolve));
          acks.push(String(args[2]));
          return 1;
        }
        if (command === 'XAUTOCLAIM') return ['0-0', []];
        return 'OK';
      },
      disconnect: () => endRead(),
      duplicate: () => connection,
    };
    const ackAll = () => waitingAcks.splice(0).forEach((resolve) => resolve());
    return { connection, acks, ackAll, waitingAcks };
  }

  it('hands on the next entry without waiting for the previous acknowledgement, and close waits for those in flight', async () => {
    const redis = fakeRedis();
    const server = RedisStreamsServer({ client: redis.connection, group: 'g', consumer: 'c', streams: ['orders'] });
    const handled: string[] = [];
    const handler = Object.assign(
      async (data: unknown) => {
        handled.push((data as { id: string }).id);
      },
      { isEventHandler: true },
    );
    (server as unknown as { addHandler(pattern: string, handler: unknown, isEvent: boolean): void }).addHandler(
      'orders',
      handler,
      true,
    );
    const turns = async (n: number) => {
      for (let turn = 0; turn < n; turn++) await new Promise((resolve) => setImmediate(resolve));
    };
    await new Promise<void>((resolve, reject) => server.listen((error) => (error ? reject(error) : resolve())));
    await turns(20);
    // Both entries were handled while the first acknowledgement was still on its way.
    const handledBeforeAcks = [...handled];
    const acksBefore = [...redis.acks];
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    await turns(5);
    const closedBeforeAcks = closed;
    for (let turn = 0; turn < 20 && redis.acks.length < 2; turn++) {
      redis.ackAll();
      await turns(1);
    }
    await closing;
    expect(handledBeforeAcks).toEqual(['e1', 'e2']);
    expect(acksBefore).toEqual([]);
    expect(closedBeforeAcks).toBe(false);
    expect(redis.acks).toEqual(['1-0', '2-0']);
  });
});
