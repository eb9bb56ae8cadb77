import { Server } from '@nestjs/microservices';
import { REDIS_STREAMS_TRANSPORT, RedisStreamsServer, RedisStreamsServerClient } from './redis-streams-server';

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
