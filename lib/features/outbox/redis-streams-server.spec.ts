import { Server } from '@nestjs/microservices';
import { REDIS_STREAMS_TRANSPORT, RedisStreamsServer, RedisStreamsServerClient } from './redis-streams-server';
import { RedisStreamsContext, streamEntryFields } from './redis-streams-message';
import { VirtualClock } from '../../kernel/clock';

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

const event = (id: string) => ({ id, topic: 'orders', key: null, payload: {}, headers: {}, occurredAt: 0 });
type Entry = [string, string[]];
const entry = (id: string, eventId: string): Entry => [id, streamEntryFields(event(eventId))];

/** Whether stream entry id `a` comes after `b`. */
function later(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs = 0] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}

/**
 * A Redis holding stream `orders` for one consumer of one group, as the
 * server sees it: a blocking read (`>`) hands over what was pushed, which
 * joins the consumer's pending entries; a read from an id answers the
 * pending entries after it; `XACK` removes one (once `ackAll` lets it
 * through, when acknowledgements are held); the first `XAUTOCLAIM` takes
 * over the `claimable` entries. The reading connection emits
 * `'ready'` once connected, and again when told it came back.
 */
function fakeRedis(options: { holdAcks?: boolean; pending?: Entry[]; claimable?: Entry[] } = {}) {
  const pending = new Map<string, string[]>(options.pending);
  // Entries another consumer left pending and idle: the first XAUTOCLAIM takes them over for this one.
  let claimable = options.claimable ?? [];
  const fresh: Entry[] = [];
  const acks: string[] = [];
  const waitingAcks: Array<() => void> = [];
  const readyListeners: Array<() => void> = [];
  let blocked: { resolve: (reply: unknown) => void; reject: (error: Error) => void } | undefined;
  const serveBlocked = () => {
    if (blocked === undefined || fresh.length === 0) return;
    const read = blocked;
    blocked = undefined;
    const entries = fresh.splice(0);
    for (const [id, fields] of entries) pending.set(id, fields);
    read.resolve([['orders', entries]]);
  };
  const connection: RedisStreamsServerClient & { on(event: 'ready', listener: () => void): void } = {
    call: async (command: string, ...args: (string | number)[]) => {
      if (command === 'XREADGROUP') {
        const from = String(args[args.length - 1]);
        if (from !== '>') {
          const count = Number(args[args.indexOf('COUNT') + 1]);
          const entries = [...pending].filter(([id]) => later(id, from)).slice(0, count);
          return entries.length > 0 ? [['orders', entries]] : null;
        }
        return new Promise((resolve, reject) => {
          blocked = { resolve, reject };
          serveBlocked();
        });
      }
      if (command === 'XACK') {
        if (options.holdAcks === true) await new Promise<void>((resolve) => waitingAcks.push(resolve));
        pending.delete(String(args[2]));
        acks.push(String(args[2]));
        return 1;
      }
      if (command === 'XAUTOCLAIM') {
        const claimed = claimable;
        claimable = [];
        for (const [id, fields] of claimed) pending.set(id, fields);
        return ['0-0', claimed];
      }
      return 'OK';
    },
    disconnect: () => failRead(new Error('disconnected')),
    duplicate: () => {
      queueMicrotask(() => readyListeners.forEach((listener) => listener()));
      return connection;
    },
    on: (_event, listener) => readyListeners.push(listener),
  };
  const failRead = (error: Error) => {
    blocked?.reject(error);
    blocked = undefined;
  };
  return {
    connection,
    acks,
    pending,
    waitingAcks,
    ackAll: () => waitingAcks.splice(0).forEach((resolve) => resolve()),
    /** New entries, handed to the blocking read. */
    push: (...entries: Entry[]) => {
      fresh.push(...entries);
      serveBlocked();
    },
    /**
     * The blocking read is served but its reply is lost with the connection:
     * the entries are pending for the consumer, the connection comes back
     * and the read, sent again, waits for newer entries.
     */
    loseReplyAndReconnect: (...entries: Entry[]) => {
      for (const [id, fields] of entries) pending.set(id, fields);
      readyListeners.forEach((listener) => listener());
    },
    failRead,
  };
}

const turns = async (n: number) => {
  for (let turn = 0; turn < n; turn++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * A server on `redis` whose `orders` handler records each entry, takes
 * `turnsFor(event id)` turns of the event loop, and may wait for `gate`.
 */
function serverOn(redis: ReturnType<typeof fakeRedis>, turnsFor: (eventId: string) => number = () => 0) {
  const server = RedisStreamsServer({ client: redis.connection, group: 'g', consumer: 'c', streams: ['orders'] });
  const handled: Array<{ id: string; redelivery: boolean }> = [];
  let gate: Promise<void> | undefined;
  const handler = Object.assign(
    async (data: unknown, context: unknown) => {
      handled.push({ id: (data as { id: string }).id, redelivery: (context as RedisStreamsContext).isRedelivery() });
      await turns(turnsFor((data as { id: string }).id));
      await gate;
    },
    { isEventHandler: true },
  );
  (server as unknown as { addHandler(pattern: string, handler: unknown, isEvent: boolean): void }).addHandler(
    'orders',
    handler,
    true,
  );
  const listening = new Promise<void>((resolve, reject) =>
    server.listen((error) => (error ? reject(error) : resolve())),
  );
  return {
    server,
    handled,
    listening,
    /** Holds every handler until the returned function is called. */
    hold: () => {
      let open = (): void => undefined;
      gate = new Promise<void>((resolve) => (open = resolve));
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

describe('RedisStreamsServer acknowledgements', () => {
  it('hands on the next entry without waiting for the previous acknowledgement, and close waits for those in flight', async () => {
    const redis = fakeRedis({ holdAcks: true });
    redis.push(entry('1-0', 'e1'), entry('2-0', 'e2'));
    const { server, handled, listening } = serverOn(redis);
    await listening;
    await turns(20);
    // Both entries were handled while the first acknowledgement was still on its way.
    const handledBeforeAcks = handled.map((h) => h.id);
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

describe("RedisStreamsServer: this consumer's own pending entries", () => {
  it('hands over at start, as redeliveries, the entries a previous run under the same name left pending', async () => {
    const redis = fakeRedis({ pending: [entry('1-0', 'e1'), entry('2-0', 'e2')] });
    const { server, handled, listening } = serverOn(redis);
    await listening;
    await turns(20);
    redis.push(entry('3-0', 'e3'));
    await turns(20);
    await server.close();
    expect(handled).toEqual([
      { id: 'e1', redelivery: true },
      { id: 'e2', redelivery: true },
      { id: 'e3', redelivery: false },
    ]);
    expect(redis.acks).toEqual(['1-0', '2-0', '3-0']);
    expect(redis.pending.size).toBe(0);
  });

  it('hands over the entries of a read whose reply was lost once the reading connection is back, and no entry twice', async () => {
    const redis = fakeRedis();
    const { server, handled, listening, hold } = serverOn(redis);
    await listening;
    await turns(20);
    // e1 is being handled, e2 read and waiting its turn, when the connection drops and a reply carrying e3 is lost.
    const release = hold();
    redis.push(entry('1-0', 'e1'), entry('2-0', 'e2'));
    await turns(5);
    redis.loseReplyAndReconnect(entry('3-0', 'e3'));
    await turns(20);
    const whileHeld = handled.map((h) => h.id);
    release();
    await turns(20);
    // The connection comes back again once all is acknowledged: nothing is pending, nothing is handed over.
    redis.loseReplyAndReconnect();
    await turns(20);
    await server.close();
    // e3 was handed over at once, beside e1; e2 was left to the read loop.
    expect(whileHeld).toEqual(['e1', 'e3']);
    expect(handled).toEqual([
      { id: 'e1', redelivery: false },
      { id: 'e3', redelivery: true },
      { id: 'e2', redelivery: false },
    ]);
    expect(redis.acks.sort()).toEqual(['1-0', '2-0', '3-0']);
    expect(redis.pending.size).toBe(0);
  });

  it('hands over once each entry that a claim and the read of its own pending entries both return', async () => {
    // At listen, XAUTOCLAIM takes over another consumer's idle entries, and the read of this consumer's pending
    // entries, sent right after it, returns them again.
    const redis = fakeRedis({ claimable: [entry('1-0', 'e1'), entry('2-0', 'e2'), entry('3-0', 'e3')] });
    // e2 takes longer than the others: the pass that handles it comes to e3 after the other pass handled it.
    const { server, handled, listening } = serverOn(redis, (id) => (id === 'e2' ? 6 : 1));
    await listening;
    await turns(100);
    await server.close();
    expect(handled.map((h) => h.id)).toEqual(['e1', 'e2', 'e3']);
    expect(redis.acks).toEqual(['1-0', '2-0', '3-0']);
  });

  it('reads them after a failed read too, when the connection cannot say it came back', async () => {
    const redis = fakeRedis();
    const connection: RedisStreamsServerClient = {
      call: (command, ...args) => redis.connection.call(command, ...args),
      disconnect: () => redis.connection.disconnect(),
      duplicate: () => connection,
    };
    const clock = new VirtualClock(0);
    const server = RedisStreamsServer({ client: connection, group: 'g', consumer: 'c', streams: ['orders'], clock });
    const handled: string[] = [];
    (server as unknown as { addHandler(pattern: string, handler: unknown, isEvent: boolean): void }).addHandler(
      'orders',
      Object.assign(async (data: unknown) => void handled.push((data as { id: string }).id), { isEventHandler: true }),
      true,
    );
    await new Promise<void>((resolve, reject) => server.listen((error) => (error ? reject(error) : resolve())));
    await turns(20);
    redis.loseReplyAndReconnect(entry('1-0', 'e1'));
    redis.failRead(new Error('Connection is closed.'));
    await turns(20);
    const beforePause = [...handled];
    await clock.advance(1000);
    await turns(20);
    await server.close();
    expect(beforePause).toEqual([]);
    expect(handled).toEqual(['e1']);
    expect(redis.pending.size).toBe(0);
  });
});
