import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import type { INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { RedisStreamsPublisher, RedisStreamsServer, type OutboxEvent } from 'resilience4nest';
import { Shipments, ShippingModule } from '../src/shipping.module.js';

/** A free loopback port, as the kernel hands one out. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Asks `check` every 20 ms until it holds, for at most `tries` times. */
async function until(what: string, check: () => Promise<boolean>, tries = 250): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${what}: not within ${tries * 20} ms`);
}

const GROUP = 'shipping';
const STREAM = 'order.created';

describe('the outbox Redis Streams transport under NestJS 12 microservices (ES modules)', () => {
  let server: ChildProcess;
  let url: string;
  let admin: Redis;
  let consumerClient: Redis;
  let publisherClient: Redis;
  let consumer: INestMicroservice;

  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    let spawnError: Error | undefined;
    server.on('error', (error) => (spawnError = error));
    admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    admin.on('error', () => undefined);
    await until('redis-server answering PING', async () => {
      if (spawnError !== undefined)
        throw new Error(`redis-server could not start (apt-get install redis-server): ${spawnError.message}`);
      return admin.ping().then(
        () => true,
        () => false,
      );
    });
    consumerClient = new Redis(url);
    publisherClient = new Redis(url);
    consumer = await NestFactory.createMicroservice<MicroserviceOptions>(ShippingModule, {
      strategy: RedisStreamsServer({ client: consumerClient, group: GROUP, consumer: 'shipping-1', block: '50ms' }),
      logger: false,
    });
    await consumer.listen();
  }, 30_000);

  afterAll(async () => {
    await consumer?.close();
    consumerClient?.disconnect();
    publisherClient?.disconnect();
    admin?.disconnect();
    server?.kill('SIGKILL');
  });

  it('delivers an event sent twice (a relay re-sending after a crash) to the idempotent handler once, and acknowledges both', async () => {
    const publisher = RedisStreamsPublisher({ client: publisherClient });
    expect(publisher.deliveryGuarantee).toBe('at-least-once');
    const event: OutboxEvent<{ orderId: string }> = {
      id: '0b9f4c52-3f4e-4a43-9d55-6f1f0f0c1a01',
      topic: STREAM,
      key: 'order-1',
      payload: { orderId: 'order-1' },
      headers: {},
      occurredAt: Date.now(),
    };
    await publisher.publish(event);
    await publisher.publish(event);

    const groupState = async (): Promise<{ pending: number; lag: number }> => {
      const [fields] = (await admin.xinfo('GROUPS', STREAM)) as unknown[][];
      const info = new Map<string, unknown>();
      for (let i = 0; i < fields.length; i += 2) info.set(String(fields[i]), fields[i + 1]);
      return { pending: Number(info.get('pending')), lag: Number(info.get('lag')) };
    };
    await until('both entries read and acknowledged', async () => {
      const { pending, lag } = await groupState();
      return pending === 0 && lag === 0;
    });
    expect(await admin.xlen(STREAM)).toBe(2);
    expect(consumer.get(Shipments).orders).toEqual(['order-1']);
  });
});
