import { createHash } from 'node:crypto';
import { Clock } from '../clock';
import { RateLimiterStore, RateLimiterStoreAnswer, RateLimiterStoreRequest } from './rate-limiter-store';

/** Key prefix used when the `prefix` option is not given. */
export const DEFAULT_RATE_LIMITER_REDIS_PREFIX = 'resilience4nest:ratelimiter:';

/** The commands the store sends; an `ioredis` `Redis` (or `Cluster`) client provides them. */
export interface RedisRateLimiterClient {
  /** Runs a cached Lua script by its SHA-1. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Runs (and caches) a Lua script. */
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

/** Options of {@link RedisRateLimiterStore}. */
export interface RedisRateLimiterStoreOptions {
  /** An `ioredis` client. */
  readonly client: RedisRateLimiterClient;
  /** Prefix of every key the store writes; default {@link DEFAULT_RATE_LIMITER_REDIS_PREFIX}. */
  readonly prefix?: string;
  /**
   * Where the periods' time comes from. Default: the Redis server's own
   * clock (`TIME`), so processes whose clocks disagree still agree on the
   * periods. A clock given here must read the same in every process
   * (wall-clock ms, or a test's virtual clock).
   */
  readonly clock?: Clock;
}

/**
 * Resilience4j's `AtomicRateLimiter` step on a Redis hash (origin, cycle,
 * permits), times in microseconds: refill for the periods gone by, compute
 * the wait for the permits, reserve them when the wait fits the timeout.
 * Numbers are written with %.0f / %.17g, since Lua's default formatting
 * keeps only 14 digits.
 * KEYS: state. ARGV: permits, limitForPeriod, period µs, timeout µs, drain (0/1), now µs ('' = Redis TIME).
 */
const ACQUIRE = `
if redis.replicate_commands then redis.replicate_commands() end
local permits = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local timeout = tonumber(ARGV[4])
local now
if ARGV[6] ~= '' then
  now = tonumber(ARGV[6])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local state = redis.call('HMGET', KEYS[1], 'origin', 'cycle', 'permits')
local origin, cycle, available = tonumber(state[1]), tonumber(state[2]), tonumber(state[3])
if origin == nil or cycle == nil or available == nil or now < origin then
  origin, cycle, available = now, 0, limit
end
local elapsed = now - origin
local current = math.floor(elapsed / period)
if current ~= cycle then
  available = math.min(available + (current - cycle) * limit, limit)
  cycle = current
end
local toNext = (current + 1) * period - elapsed
local wait = 0
if available < permits then
  wait = math.max(0, math.ceil((permits - available - limit) / limit)) * period + toNext
end
local reserved, drained = 0, 0
if ARGV[5] == '1' then
  if available > 0 then drained = available; available = 0 end
elseif wait <= timeout then
  reserved = 1
  available = available - permits
end
redis.call('HSET', KEYS[1], 'origin', string.format('%.0f', origin), 'cycle', string.format('%.0f', cycle), 'permits', string.format('%.0f', available))
redis.call('PEXPIRE', KEYS[1], math.ceil((period + timeout) / 1000) + 1000)
return {reserved, string.format('%.17g', wait), available, string.format('%.17g', toNext), drained}
`;

const SHA = createHash('sha1').update(ACQUIRE).digest('hex');
const MICROS_PER_MS = 1000;

/**
 * Keeps shared rate limiters' permits in Redis: one atomic Lua script per
 * acquire, with Resilience4j's period semantics (the same as an in-process
 * `@RateLimiter`), so `limitForPeriod`, `limitRefreshPeriod` and
 * `availablePermissions` mean what they mean there. The periods start when
 * the first process acquires (the key's creation); a key left idle for a
 * period plus `timeoutDuration` expires, which changes nothing, since its
 * next period would start full anyway.
 *
 * @example
 * ```ts
 * ResilienceModule.forRoot({
 *   rateLimiterStore: new RedisRateLimiterStore({ client: new Redis(process.env.REDIS_URL) }),
 *   rateLimiter: { instances: { partnerApi: { shared: true, limitForPeriod: 100, limitRefreshPeriod: '1s', timeoutDuration: 0 } } },
 * });
 * ```
 */
export class RedisRateLimiterStore implements RateLimiterStore {
  private readonly client: RedisRateLimiterClient;
  private readonly prefix: string;
  private readonly clock: Clock | undefined;

  /** @param options - the client, key prefix and clock */
  constructor(options: RedisRateLimiterStoreOptions) {
    this.client = options.client;
    this.prefix = options.prefix ?? DEFAULT_RATE_LIMITER_REDIS_PREFIX;
    this.clock = options.clock;
  }

  /** {@inheritDoc RateLimiterStore.acquire} */
  async acquire(request: RateLimiterStoreRequest): Promise<RateLimiterStoreAnswer> {
    const args = [
      request.permits,
      request.limitForPeriod,
      String(request.limitRefreshPeriodMs * MICROS_PER_MS),
      String(request.timeoutMs * MICROS_PER_MS),
      request.drain ? 1 : 0,
      this.clock === undefined ? '' : String(Math.round(this.clock.now() * MICROS_PER_MS)),
    ];
    const key = this.prefix + request.name;
    let reply: unknown;
    try {
      reply = await this.client.evalsha(SHA, 1, key, ...args);
    } catch (error) {
      // The script cache is empty after a Redis restart or failover; EVAL reloads it.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      reply = await this.client.eval(ACQUIRE, 1, key, ...args);
    }
    const [reserved, wait, available, toNext, drained] = reply as [number, string, number, string, number];
    return {
      reserved: reserved === 1,
      waitMs: Number(wait) / MICROS_PER_MS,
      availablePermissions: Number(available),
      nextPeriodInMs: Number(toNext) / MICROS_PER_MS,
      drained: Number(drained),
    };
  }
}
