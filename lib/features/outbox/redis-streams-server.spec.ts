import { Server } from '@nestjs/microservices';
import { RedisStreamsServer, RedisStreamsServerClient } from './redis-streams-server';

const client = {
  call: async () => null,
  disconnect: () => undefined,
  duplicate: () => client,
} as RedisStreamsServerClient;

describe('RedisStreamsServer options', () => {
  it('is a Nest Server, with its own transport id', () => {
    const server = new RedisStreamsServer({ client, group: 'shipping', consumer: 'c-1' });
    expect(server).toBeInstanceOf(Server);
    expect(server).toBeInstanceOf(RedisStreamsServer);
    expect(typeof server.transportId).toBe('symbol');
  });

  it('refuses bad options, naming the key', () => {
    expect(() => new RedisStreamsServer({ client: {} as never, group: 'g', consumer: 'c' })).toThrow(
      /key 'client' must be an ioredis client/,
    );
    expect(() => new RedisStreamsServer({ client, group: 'g' } as never)).toThrow(
      /'group' and 'consumer' are required/,
    );
    expect(() => new RedisStreamsServer({ client, group: ' ', consumer: 'c' })).toThrow(
      /key 'group' must be a non-empty string/,
    );
    expect(() => new RedisStreamsServer({ client, group: 'g', consumer: 'c', claimIdle: 'soon' })).toThrow(/claimIdle/);
    expect(() => new RedisStreamsServer({ client, group: 'g', consumer: 'c', streams: [] })).toThrow(/key 'streams'/);
    expect(() => new RedisStreamsServer({ client, group: 'g', consumer: 'c', count: 0 })).toThrow(/count/);
    expect(() => new RedisStreamsServer({ client, group: 'g', consumer: 'c', claimIdel: '1s' } as never)).toThrow(
      /claimIdel/,
    );
  });
});
