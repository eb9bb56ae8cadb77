import { createHash } from 'node:crypto';
import { Clock } from '../kernel/clock';
import {
  RateLimiterStore,
  RateLimiterStoreAnswer,
  RateLimiterStoreRelease,
  RateLimiterStoreRequest,
} from '../policies/rate-limiter/rate-limiter-store';

/** Key prefix used when the `prefix` option is not given. */
export const DEFAULT_RATE_LIMITER_REDIS_PREFIX = 'resilience4nest:ratelimiter:';

/** The commands the store sends; an `ioredis` `Redis` (or `Cluster`) client provides them. */
export interface RedisRateLimiterClient {
  /** Runs a cached Lua script by its SHA-1. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>;
  /** Runs (and caches) a Lua script. */
  eval(script: string, numkeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>;
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
 * Resilience4j's `AtomicRateLimiter` step on one Redis string, times in
 * microseconds: refill for the periods gone by, compute the wait for the
 * permits, reserve them when the wait fits the timeout.
 *
 * Every redis.call, table and number-to-text conversion is a good part of
 * the script's time inside Redis, so it takes one binary argument (five
 * little-endian doubles: permits; limitForPeriod; period; timeout, -1 to
 * drain; now, -1 for Redis `TIME`), keeps its state as three packed
 * doubles (origin, cycle, permits left), writes only when it took
 * permits (or started the periods), and sets the expiry only at the first
 * write of a period.
 * The common answers are one integer, n = permits left × (period + 1) +
 * µs to the next period: n when the permits were taken at once, -1 - n
 * when they were refused (the caller works the wait out from n). Any
 * other answer (a wait, a drain, fractions, figures past 2^53) is text:
 * "reserved drained wait left toNext".
 * KEYS: state.
 */
const ACQUIRE = `
local permits, limit, period, timeout, now = struct.unpack('<ddddd', ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local state = redis.call('GET', KEYS[1])
local origin, cycle, available
if state then
  origin, cycle, available = struct.unpack('<ddd', state)
  if now < origin then state = nil end
end
if not state then origin, cycle, available = now, -1, limit end
local elapsed = now - origin
local current = math.floor(elapsed / period)
local first = current ~= cycle
if first then
  available = available + (current - cycle) * limit
  if available > limit then available = limit end
end
local toNext = (current + 1) * period - elapsed
local wait = 0
if available < permits then
  local cycles = math.ceil((permits - available - limit) / limit)
  if cycles < 0 then cycles = 0 end
  wait = cycles * period + toNext
end
local reserved, taken = 0, 0
if timeout < 0 then
  if available > 0 then taken = available end
elseif wait <= timeout then
  reserved, taken = 1, permits
end
-- A refusal changes nothing stored but where the periods start: a new key's origin is written all the same.
if taken > 0 or not state then
  available = available - taken
  local packed = struct.pack('<ddd', origin, current, available)
  if first then
    -- Kept until the last period its permits may be reserved in has ended, and a second more.
    redis.call('SET', KEYS[1], packed, 'PX', math.ceil((toNext + math.ceil(math.max(timeout, 0) / period) * period) / 1000) + 1000)
  else
    redis.call('SET', KEYS[1], packed, 'KEEPTTL')
  end
end
if timeout >= 0 and available >= 0 and (reserved == 0 or wait == 0) and period % 1 == 0 and toNext % 1 == 0 then
  local n = available * (period + 1) + toNext
  if n < 2^53 then
    if reserved == 1 then return n end
    return -1 - n
  end
end
local drained = timeout < 0 and taken or 0
-- %d is much cheaper than %.17g, and exact for whole numbers below 2^53.
if wait % 1 == 0 and toNext % 1 == 0 and available % 1 == 0 and wait < 2^53 and toNext < 2^53 and math.abs(available) < 2^53 then
  return string.format('%d %d %d %d %d', reserved, drained, wait, available, toNext)
end
return string.format('%d %d %.17g %.17g %.17g', reserved, drained, wait, available, toNext)
`;

/**
 * Gives back permits a late acquire took: added to the permits left (at
 * most `limitForPeriod`) when the stored state is of the current period,
 * which is the period they were taken in unless a later period has begun
 * (then they belonged to an ended period, and nothing is given back).
 * ARGV: permits, limitForPeriod, period (µs), now (µs, -1 for Redis `TIME`). KEYS: state.
 */
const RELEASE = `
local permits, limit, period, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if now < 0 then
  local t = redis.call('TIME')
  now = t[1] * 1000000 + t[2]
end
local state = redis.call('GET', KEYS[1])
if not state then return 0 end
local origin, cycle, available = struct.unpack('<ddd', state)
if now < origin or math.floor((now - origin) / period) ~= cycle then return 0 end
local given = math.min(permits, limit - available)
if given <= 0 then return 0 end
redis.call('SET', KEYS[1], struct.pack('<ddd', origin, cycle, available + given), 'KEEPTTL')
return given
`;

const SHA = createHash('sha1').update(ACQUIRE).digest('hex');
const RELEASE_SHA = createHash('sha1').update(RELEASE).digest('hex');
const MICROS_PER_MS = 1000;
/** `now` or `timeout` in the script's argument: read the time from Redis; drain. */
const UNSET = -1;
const ARGUMENT_BYTES = 5 * 8;

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
    const periodUs = request.limitRefreshPeriodMs * MICROS_PER_MS;
    const argument = Buffer.allocUnsafe(ARGUMENT_BYTES);
    argument.writeDoubleLE(request.permits, 0);
    argument.writeDoubleLE(request.limitForPeriod, 8);
    argument.writeDoubleLE(periodUs, 16);
    argument.writeDoubleLE(request.drain ? UNSET : request.timeoutMs * MICROS_PER_MS, 24);
    argument.writeDoubleLE(this.clock === undefined ? UNSET : Math.round(this.clock.now() * MICROS_PER_MS), 32);
    const reply = await this.run(ACQUIRE, SHA, request.name, argument);
    if (typeof reply === 'number') return integerAnswer(reply, request, periodUs);
    const [reserved, drained, wait, available, toNext] = String(reply).split(' ').map(Number);
    return {
      reserved: reserved === 1,
      waitMs: wait / MICROS_PER_MS,
      availablePermissions: available,
      nextPeriodInMs: toNext / MICROS_PER_MS,
      drained,
    };
  }

  /** {@inheritDoc RateLimiterStore.release} */
  async release(request: RateLimiterStoreRelease): Promise<void> {
    await this.run(
      RELEASE,
      RELEASE_SHA,
      request.name,
      request.permits,
      request.limitForPeriod,
      request.limitRefreshPeriodMs * MICROS_PER_MS,
      this.clock === undefined ? UNSET : Math.round(this.clock.now() * MICROS_PER_MS),
    );
  }

  private async run(script: string, sha: string, name: string, ...args: (number | Buffer)[]): Promise<unknown> {
    const key = this.prefix + name;
    try {
      return await this.client.evalsha(sha, 1, key, ...args);
    } catch (error) {
      // The script cache is empty after a Redis restart or failover; EVAL reloads it.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(script, 1, key, ...args);
    }
  }
}

/** Decodes the script's integer answer (permits taken at once, or refused); exact, since n < 2^53. */
function integerAnswer(reply: number, request: RateLimiterStoreRequest, periodUs: number): RateLimiterStoreAnswer {
  const refused = reply < 0;
  const n = refused ? -1 - reply : reply;
  const available = Math.floor(n / (periodUs + 1));
  const toNextUs = n - available * (periodUs + 1);
  // Refused means fewer permits are left than asked for: the wait runs to the period that has them, as in the script.
  const limit = request.limitForPeriod;
  const waitUs = refused
    ? Math.max(0, Math.ceil((request.permits - available - limit) / limit)) * periodUs + toNextUs
    : 0;
  return {
    reserved: !refused,
    waitMs: waitUs / MICROS_PER_MS,
    availablePermissions: available,
    nextPeriodInMs: toNextUs / MICROS_PER_MS,
    drained: 0,
  };
}
