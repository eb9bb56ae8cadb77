import { Logger } from '@nestjs/common';
import Redis from 'ioredis';

/** Injection token of the shop's event transport. */
export const SHOP_EVENTS = 'SHOP_EVENTS';

/**
 * The shop's event transport: Redis Streams, or none. The outbox relay adds
 * each event to the stream named by its topic (`RedisStreamsPublisher`), and
 * the fulfilment consumer reads it through a consumer group
 * (`RedisStreamsServer`), on this one client.
 */
export interface ShopEvents {
  /** The Redis client, or `undefined` when the shop has no Redis (it then publishes no events). */
  readonly redis: Redis | undefined;
  close(): Promise<void>;
}

/** Events over Redis Streams at `url` (none when `undefined`). */
export function shopEvents(url: string | undefined): ShopEvents {
  if (url === undefined) return { redis: undefined, close: async () => undefined };
  const redis = new Redis(url);
  const logger = new Logger('ShopEvents');
  // Without a listener, a lost connection would end the process; ioredis reconnects by itself.
  redis.on('error', (error: Error) => logger.warn(`Redis connection: ${error.message}`));
  return { redis, close: async () => void (await redis.quit()) };
}

/** The shop's events over Redis Streams at `REDIS_URL`; without it the shop publishes no events. */
export function shopEventsFromEnv(env: NodeJS.ProcessEnv = process.env): ShopEvents {
  return shopEvents(env.REDIS_URL || undefined);
}
