import { Pool } from 'pg';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { readOutboxOptions, toPublishFunction } from './outbox.options';
import { PostgresOutboxStore } from '../../stores/postgres-outbox-store';
import { Outbox } from './outbox';
import { of, throwError } from 'rxjs';
import { ClientNats, ClientRedis, ClientRMQ, ClientTCP } from '@nestjs/microservices';

// Never connected: the options are only read.
const pool = new Pool();
const store = new PostgresOutboxStore({ pool });
const publisher = async () => undefined;

describe('outbox options', () => {
  it('resolves the documented defaults', () => {
    expect(readOutboxOptions({ store, publisher })).toMatchObject({
      store,
      relay: {
        enabled: true,
        batchSize: 100,
        pollIntervalMs: 1000,
        notify: true,
        leaseMs: 30_000,
        maxAttempts: 10,
        retry: 'outbox',
        circuitBreaker: 'outbox',
        publishTimeoutMs: 30_000,
      },
      retentionMs: 7 * 24 * 3_600_000,
      createSchema: true,
    });
    expect(readOutboxOptions(undefined)).toBeUndefined();
  });

  it('reads durations and relaxed spellings', () => {
    const resolved = readOutboxOptions({
      store,
      publisher,
      relay: {
        'poll-interval': '250ms',
        lease: '1m',
        'max-attempts': '3',
        circuit_breaker: 'broker',
        'publish-timeout': '2s',
      },
      retention: '1d',
    });
    expect(resolved?.relay).toMatchObject({
      pollIntervalMs: 250,
      leaseMs: 60_000,
      maxAttempts: 3,
      circuitBreaker: 'broker',
      publishTimeoutMs: 2000,
    });
    expect(resolved?.retentionMs).toBe(86_400_000);
  });

  it.each([
    ['a store that is not one', { store: {}, publisher }, /key 'store' must be an outbox store/],
    [
      'a publisher that is neither',
      { store, publisher: 42 },
      /key 'publisher' must be a ClientProxy \(with emit\), a publisher \(with publish\(event\).*\) or a function/,
    ],
    [
      'batchSize 0',
      { store, publisher, relay: { batchSize: 0 } },
      /outbox options 'relay': key 'batchSize' must be an integer between 1 and 10000, got 0/,
    ],
    [
      'a zero pollInterval',
      { store, publisher, relay: { pollInterval: '0ms' } },
      /key 'pollInterval' must be a positive duration/,
    ],
    [
      'a lease no longer than the poll',
      { store, publisher, relay: { lease: '1s', pollInterval: '1s' } },
      /'relay.lease' \(1000 ms\) must be longer than 'relay.pollInterval' \(1000 ms\)/,
    ],
    [
      'a zero publishTimeout',
      { store, publisher, relay: { publishTimeout: 0 } },
      /outbox options 'relay': key 'publishTimeout' must be a positive duration/,
    ],
    ['an empty retry name', { store, publisher, relay: { retry: '' } }, /key 'retry' must be an instance name/],
    ['a misspelt relay key', { store, publisher, relay: { batchsise: 5 } }, /unknown key 'batchsise'/],
    ['a misspelt top-level key', { store, publisher, retension: '1d' }, /outbox options: unknown key 'retension'/],
  ])('refuses %s, naming the key', (_label, raw, message) => {
    expect(() => readOutboxOptions(raw)).toThrow(message);
  });

  it('fails bootstrap through the module option, and names the option when the outbox is used without it', async () => {
    expect(() => new ResilienceRegistry({ outbox: { store, publisher, relay: { maxAttempts: -1 } } })).not.toThrow();
    expect(
      () => new Outbox(new ResilienceRegistry({ outbox: { store, publisher, relay: { maxAttempts: -1 } } })),
    ).toThrow(/key 'maxAttempts' must be an integer >= 1/);
    const off = new Outbox(new ResilienceRegistry({}));
    expect(off.configured).toBe(false);
    await expect(off.add('t', 1)).rejects.toThrow(/Outbox.add needs the module option 'outbox'/);
  });

  it('publishes through a ClientProxy as an envelope, settled by the Observable', async () => {
    const emitted: Array<[string, unknown]> = [];
    const event = { id: 'e1', topic: 'order.created', key: 'k', payload: { n: 1 }, headers: { a: 'b' }, occurredAt: 5 };
    const ok = toPublishFunction({
      emit: (pattern: string, data: unknown) => (emitted.push([pattern, data]), of(undefined)),
    });
    await ok(event);
    expect(emitted).toEqual([['order.created', { outbox: 1, ...event }]]);
    const down = toPublishFunction({ emit: () => throwError(() => new Error('ECONNREFUSED')) });
    await expect(down(event)).rejects.toThrow('ECONNREFUSED');
  });

  it('emits through a ClientProxy, never calling the packet-level publish every ClientProxy has', async () => {
    const emitted: string[] = [];
    const event = { id: 'e1', topic: 'order.created', key: null, payload: 1, headers: {}, occurredAt: 5 };
    const proxy = {
      emit: (pattern: string) => (emitted.push(pattern), of(undefined)),
      publish: () => {
        throw new Error('ClientProxy.publish is for requests');
      },
    };
    await toPublishFunction(proxy)(event);
    expect(emitted).toEqual(['order.created']);
  });

  it('publishes through a publisher object, settled by its publish promise', async () => {
    const published: unknown[] = [];
    const event = { id: 'e1', topic: 'order.created', key: null, payload: 1, headers: {}, occurredAt: 5 };
    const publisher = {
      deliveryGuarantee: 'at-least-once' as const,
      publish: async (e: unknown) => void published.push(e),
    };
    await toPublishFunction(publisher)(event);
    expect(published).toEqual([event]);
    await expect(toPublishFunction({ publish: () => Promise.reject(new Error('NOGROUP')) })(event)).rejects.toThrow(
      'NOGROUP',
    );
  });
});

describe('publishers that cannot confirm delivery', () => {
  // Made without their constructors, which load the broker's client package (NestJS 12 exits the process when it cannot).
  const redis = Object.create(ClientRedis.prototype) as ClientRedis;
  const nats = Object.create(ClientNats.prototype) as ClientNats;
  const tcp = Object.create(ClientTCP.prototype) as ClientTCP;
  class TracedTcp extends ClientTCP {}

  it.each([
    ['ClientRedis', redis, /Redis pub\/sub drops a message nobody is subscribed to/],
    ['ClientNats', nats, /NATS core drops a message nobody is subscribed to/],
    ['ClientTCP', tcp, /TCP has no acknowledgement/],
    ['ClientTCP', Object.create(TracedTcp.prototype) as TracedTcp, /TCP has no acknowledgement/],
  ])('refuses a %s, saying why and what to use', (name, publisher, why) => {
    const reading = () => readOutboxOptions({ store, publisher });
    expect(reading).toThrow(why);
    expect(reading).toThrow(new RegExp(`key 'publisher' is a ${name}`));
    expect(reading).toThrow(/RedisStreamsPublisher, JetStreamPublisher or RabbitMqPublisher/);
    expect(reading).toThrow(/allowAtMostOnce: true/);
  });

  it('accepts them with allowAtMostOnce: true, and any publisher that declares at-least-once delivery', () => {
    for (const publisher of [redis, nats, tcp])
      expect(readOutboxOptions({ store, publisher, allowAtMostOnce: true })?.publish).toEqual(expect.any(Function));
    const durable = { deliveryGuarantee: 'at-least-once' as const, emit: () => of(undefined) };
    expect(readOutboxOptions({ store, publisher: durable })?.publish).toEqual(expect.any(Function));
    expect(readOutboxOptions({ store, publisher: Object.create(ClientRMQ.prototype) as ClientRMQ })?.publish).toEqual(
      expect.any(Function),
    );
    expect(() => readOutboxOptions({ store, publisher, allowAtMostOnce: 'yes' })).toThrow(
      /outbox options: key 'allowAtMostOnce' must be/,
    );
  });
});
