import { createHash } from 'node:crypto';
import { Clock } from '../kernel/clock';
import {
  ClaimOptions,
  ClaimResult,
  claimDurations,
  decodeResponse,
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  encodeResponse,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
  storeDuration,
  wallClock,
} from '../features/idempotency/idempotency-store';
import { CORRUPT_RECORD, REDIS_NOT_DURABLE } from '../features/idempotency/idempotency.messages';
import { ownerToken } from '../features/idempotency/owner-token';

const STORE = 'RedisIdempotencyStore';

/** Key prefix used when the `prefix` option is not given. */
export const DEFAULT_IDEMPOTENCY_REDIS_PREFIX = 'resilience4nest:idempotency:';

const SCAN_COUNT = 500;

/** The commands the store sends; an `ioredis` `Redis` client provides them. */
export interface RedisScriptClient {
  /** Runs a cached Lua script by its SHA-1. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Runs (and caches) a Lua script. */
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Reads a string key. */
  get(key: string): Promise<string | null>;
  /** Iterates keys matching a pattern. */
  scan(
    cursor: string,
    matchToken: 'MATCH',
    pattern: string,
    countToken: 'COUNT',
    count: number,
  ): Promise<[string, string[]]>;
  /** `INFO section`, read by {@link RedisIdempotencyStore.durabilityWarning}. */
  info?(section: 'persistence'): Promise<string>;
  /** `CONFIG GET parameter`, read when `INFO` is not allowed. */
  config?(subcommand: 'GET', parameter: 'appendonly'): Promise<unknown>;
}

/** Options of {@link RedisIdempotencyStore}. */
export interface RedisIdempotencyStoreOptions {
  /** An `ioredis` client. */
  readonly client: RedisScriptClient;
  /** Prefix of every key the store writes; default {@link DEFAULT_IDEMPOTENCY_REDIS_PREFIX}. */
  readonly prefix?: string;
  /** Source of wall-clock time shared by every process using the keys; default the system clock (`Date.now`). */
  readonly clock?: Clock;
}

/**
 * A record is one string: a small JSON header (state, fingerprint, owner
 * token, times) and, after a newline, the stored answer's JSON. Scripts
 * decode only the header, so the answer passes through Lua untouched.
 */
const PARSE = `
local function parse(raw)
  local nl = string.find(raw, '\\n', 1, true)
  if not nl then error({err = 'ERR resilience4nest: not an idempotency record'}) end
  return cjson.decode(string.sub(raw, 1, nl - 1)), string.sub(raw, nl)
end
`;

// ARGV: now, fingerprint, token, leaseMs, ttlMs (ttl >= lease).
const CLAIM = `${PARSE}
local now = tonumber(ARGV[1])
local lease = now + tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local fresh = cjson.encode({s = 'in_progress', f = ARGV[2], t = ARGV[3], c = now, l = lease, e = now + ttl}) .. '\\n'
if redis.call('SET', KEYS[1], fresh, 'NX', 'PX', ttl) then return {'claimed'} end
local raw = redis.call('GET', KEYS[1])
local h, tail = parse(raw)
if h.e <= now then
  redis.call('SET', KEYS[1], fresh, 'PX', ttl)
  return {'claimed'}
end
if h.f ~= ARGV[2] then return {'fingerprint_mismatch'} end
if h.s == 'completed' or h.l > now then return {h.s, raw} end
h.t = ARGV[3]
h.l = lease
if h.e < lease then h.e = lease end
redis.call('SET', KEYS[1], cjson.encode(h) .. tail, 'PX', h.e - now)
return {'stale', raw}
`;

// ARGV: token, now, ttlMs, response.
const COMPLETE = `${PARSE}
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local h = parse(raw)
if h.s ~= 'in_progress' or h.t ~= ARGV[1] then return 0 end
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], cjson.encode({s = 'completed', f = h.f, c = h.c, e = now + ttl}) .. '\\n' .. ARGV[4], 'PX', ttl)
return 1
`;

// ARGV: token.
const RELEASE = `${PARSE}
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local h = parse(raw)
if h.s ~= 'in_progress' or h.t ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

// ARGV: token, now, leaseMs.
const RENEW = `${PARSE}
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local h, tail = parse(raw)
if h.s ~= 'in_progress' or h.t ~= ARGV[1] then return 0 end
local now = tonumber(ARGV[2])
h.l = now + tonumber(ARGV[3])
if h.e < h.l then h.e = h.l end
redis.call('SET', KEYS[1], cjson.encode(h) .. tail, 'PX', h.e - now)
return 1
`;

// ARGV: now.
const CLEANUP = `${PARSE}
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local h = parse(raw)
if h.e > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
`;

interface Script {
  readonly source: string;
  readonly sha: string;
}

interface Header {
  s: 'in_progress' | 'completed';
  f: string;
  t?: string;
  c: number;
  l?: number;
  e: number;
}

/**
 * Idempotency keys in Redis. A claim is `SET NX PX` inside a Lua script
 * that, when the key exists, reads the record and answers (or reclaims an
 * expired one, or takes over a stale one) in the same atomic step; complete,
 * release and renew are Lua scripts that check the owner token first.
 *
 * Expiry is decided on absolute times from the store's clock, kept in the
 * record; Redis's own `PX` expiry only frees the memory afterwards.
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly client: RedisScriptClient;
  private readonly prefix: string;
  private readonly clock: Clock;

  /** @param options - the client, key prefix and clock */
  constructor(options: RedisIdempotencyStoreOptions) {
    this.client = options.client;
    this.prefix = options.prefix ?? DEFAULT_IDEMPOTENCY_REDIS_PREFIX;
    this.clock = options.clock ?? wallClock;
  }

  /**
   * A warning when the server visibly keeps keys in memory only (no
   * append-only file), so a restart or failover would forget keys still in
   * progress; `undefined` when it is durable or will not say (`INFO` and
   * `CONFIG` disabled, as on some managed services).
   */
  async durabilityWarning(): Promise<string | undefined> {
    const appendOnly = await this.appendOnly();
    return appendOnly === false ? REDIS_NOT_DURABLE('appendonly no') : undefined;
  }

  private async appendOnly(): Promise<boolean | undefined> {
    try {
      const info = await this.client.info?.('persistence');
      const enabled = /^aof_enabled:(\d)/m.exec(info ?? '');
      if (enabled !== null) return enabled[1] === '1';
    } catch {
      // INFO may be renamed or refused; CONFIG below may still answer.
    }
    try {
      const reply = await this.client.config?.('GET', 'appendonly');
      if (Array.isArray(reply) && typeof reply[1] === 'string') return reply[1].toLowerCase() === 'yes';
    } catch {
      // Neither command is allowed: nothing can be seen, so nothing is said.
    }
    return undefined;
  }

  /** {@inheritDoc IdempotencyStore#claim} */
  async claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    const { leaseMs, ttlMs } = claimDurations(STORE, options);
    const now = Math.floor(this.clock.now());
    const token = ownerToken();
    const [outcome, raw] = (await this.run(SCRIPTS.claim, key, [now, fingerprint, token, leaseMs, ttlMs])) as [
      string,
      string?,
    ];
    switch (outcome) {
      case 'claimed':
        return {
          outcome,
          token,
          record: {
            key,
            state: 'in_progress',
            fingerprint,
            createdAt: now,
            expiresAt: now + ttlMs,
            leaseExpiresAt: now + leaseMs,
          },
        };
      case 'fingerprint_mismatch':
        return { outcome };
    }
    const record = toRecord(key, raw as string);
    if (record.state === 'completed') return { outcome: 'completed', record };
    if (outcome === 'stale') return { outcome, token, record };
    return { outcome: 'in_progress', record, retryAfterMs: record.leaseExpiresAt - now };
  }

  /** {@inheritDoc IdempotencyStore#complete} */
  async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    const ttl = storeDuration(STORE, 'ttlMs', ttlMs, DEFAULT_IDEMPOTENCY_TTL_MS);
    const encoded = encodeResponse(response);
    return (await this.run(SCRIPTS.complete, key, [token, Math.floor(this.clock.now()), ttl, encoded])) === 1;
  }

  /** {@inheritDoc IdempotencyStore#release} */
  async release(key: string, token: string): Promise<boolean> {
    return (await this.run(SCRIPTS.release, key, [token])) === 1;
  }

  /** {@inheritDoc IdempotencyStore#renew} */
  async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    const lease = storeDuration(STORE, 'leaseMs', leaseMs, DEFAULT_IDEMPOTENCY_LEASE_MS);
    return (await this.run(SCRIPTS.renew, key, [token, Math.floor(this.clock.now()), lease])) === 1;
  }

  /** {@inheritDoc IdempotencyStore#get} */
  async get(key: string): Promise<IdempotencyRecord | undefined> {
    const raw = await this.client.get(this.prefix + key);
    if (raw === null) return undefined;
    const record = toRecord(key, raw);
    return record.expiresAt <= Math.floor(this.clock.now()) ? undefined : record;
  }

  /**
   * Deletes the expired records and returns how many there were.
   * Walks the prefix with `SCAN`; Redis also drops records on its own once
   * their `PX` runs out, so this matters only when the clock runs ahead of
   * Redis's (tests) or memory must be freed at once.
   */
  async cleanupExpired(): Promise<number> {
    const now = Math.floor(this.clock.now());
    const pattern = `${this.prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let deleted = 0;
    let cursor = '0';
    // SCAN guarantees the cursor returns to 0 after one full pass.
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      const results = await Promise.all(keys.map((full) => this.runFull(SCRIPTS.cleanup, full, [now])));
      deleted += results.filter((result) => result === 1).length;
      cursor = next;
    } while (cursor !== '0');
    return deleted;
  }

  private run(script: Script, key: string, args: (string | number)[]): Promise<unknown> {
    return this.runFull(script, this.prefix + key, args);
  }

  private async runFull(script: Script, fullKey: string, args: (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, 1, fullKey, ...args);
    } catch (error) {
      // The script cache is empty after a Redis restart or failover; EVAL reloads it.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(script.source, 1, fullKey, ...args);
    }
  }
}

function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const SCRIPTS = {
  claim: script(CLAIM),
  complete: script(COMPLETE),
  release: script(RELEASE),
  renew: script(RENEW),
  cleanup: script(CLEANUP),
};

function toRecord(key: string, raw: string): IdempotencyRecord {
  const nl = raw.indexOf('\n');
  if (nl < 0) throw new Error(CORRUPT_RECORD(STORE, key));
  const h = JSON.parse(raw.slice(0, nl)) as Header;
  const base = { key, fingerprint: h.f, createdAt: h.c, expiresAt: h.e };
  if (h.s === 'completed') return { ...base, state: 'completed', response: decodeResponse(raw.slice(nl + 1)) };
  if (h.s === 'in_progress' && typeof h.l === 'number') return { ...base, state: 'in_progress', leaseExpiresAt: h.l };
  throw new Error(CORRUPT_RECORD(STORE, key));
}
