import { RedisStreamsPublisher, RedisStreamsPublisherClient } from './redis-streams-publisher';

const event = { id: 'e-1', topic: 'order.created', key: 'o-1', payload: { pence: 5 }, headers: {}, occurredAt: 7 };

/** A client that records each XADD and answers `answer`. */
function client(answer: string | null): RedisStreamsPublisherClient & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  return { calls, xadd: async (...args) => (calls.push(args), answer) };
}

describe('RedisStreamsPublisher', () => {
  it("adds the event to its topic's stream, trimmed with MAXLEN ~ when maxLen is given", async () => {
    const plain = client('1-0');
    await RedisStreamsPublisher({ client: plain }).publish(event);
    expect(plain.calls[0].slice(0, 2)).toEqual(['order.created', '*']);
    const trimmed = client('1-0');
    await RedisStreamsPublisher({ client: trimmed, stream: 'all', maxLen: 1000 }).publish(event);
    expect(trimmed.calls[0].slice(0, 5)).toEqual(['all', 'MAXLEN', '~', 1000, '*']);
  });

  it('fails a publish that Redis answered without an entry id', async () => {
    await expect(RedisStreamsPublisher({ client: client(null) }).publish(event)).rejects.toThrow(
      "XADD to stream 'order.created' answered no entry id for event e-1",
    );
  });

  it('declares itself at least once', () => {
    expect(RedisStreamsPublisher({ client: client('1-0') }).deliveryGuarantee).toBe('at-least-once');
  });

  it('refuses bad options, naming the key', () => {
    expect(() => RedisStreamsPublisher({ client: {} as never })).toThrow(/option 'client' must be an ioredis client/);
    expect(() => RedisStreamsPublisher({ client: client('1-0'), stream: '' })).toThrow(/option 'stream'/);
    expect(() => RedisStreamsPublisher({ client: client('1-0'), maxLen: 0 })).toThrow(/option 'maxLen'.*got 0/);
  });
});
