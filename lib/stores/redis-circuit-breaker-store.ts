import { createHash } from 'node:crypto';
import {
  CircuitBreakerStore,
  FleetListener,
  FleetOpenReport,
  FleetProbeClaim,
  FleetProbeRelease,
  FleetPublication,
  FleetTransition,
} from '../policies/circuit-breaker/circuit-breaker-store';

/** Key prefix used when the `prefix` option is not given. */
export const DEFAULT_CIRCUIT_BREAKER_REDIS_PREFIX = 'resilience4nest:circuitbreaker:';

/** The connection the store listens on: an `ioredis` client made by `duplicate()`. */
export interface RedisCircuitBreakerSubscriber {
  /** Subscribes to a channel. */
  subscribe(channel: string): Promise<unknown>;
  /** Listens to `message`, `ready`, `close` and `error`. */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Closes the connection. */
  quit(): Promise<unknown>;
}

/** The commands the store sends; an `ioredis` `Redis` client provides them. */
export interface RedisCircuitBreakerClient {
  /** Runs a cached Lua script by its SHA-1. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Runs (and caches) a Lua script. */
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** A second connection to the same server, for the subscription. */
  duplicate(): RedisCircuitBreakerSubscriber;
}

/** Options of {@link RedisCircuitBreakerStore}. */
export interface RedisCircuitBreakerStoreOptions {
  /**
   * An `ioredis` client. Give it `maxRetriesPerRequest: 1` (or turn its
   * offline queue off), so a transition reported while Redis is down fails
   * at once instead of arriving late, when Redis is back.
   */
  readonly client: RedisCircuitBreakerClient;
  /** Prefix of every key and of the channel the store uses; default {@link DEFAULT_CIRCUIT_BREAKER_REDIS_PREFIX}. */
  readonly prefix?: string;
}

/** Redis's own time in ms, so replicas whose clocks disagree still agree on the waits. */
const NOW = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
`;

/**
 * How long a key's state hash outlives its last transition beyond twice
 * its OPEN wait (the wait, then a window as long for reports and the
 * probe's verdict): a key no replica moved for that long leaves nothing in Redis.
 */
const KEY_STATE_GRACE_MS = 60_000;

/** States set by hand: a key's state in one of them is kept until it is changed, as every replica keeps it. */
const SET_BY_HAND: ReadonlySet<string> = new Set(['FORCED_OPEN', 'DISABLED', 'METRICS_ONLY']);

/**
 * Sets the fleet's state, clears the reports and the probe lease, publishes: the tail of REPORT and PUBLISH.
 * `subject` is the breaker as the messages name it (`n`, and `k` for a key). A key's hash expires after
 * `ttl` ms (kept when -1); a name's is kept. A key's versions follow Redis's clock, so that a key whose
 * hash expired and is made again still numbers its transitions above those every replica has seen.
 */
const TRANSITION = `
local function transition(subject, state, wait, replica, cause, channel, ttl)
  local version
  if subject.k then
    version = math.max((tonumber(redis.call('HGET', KEYS[1], 'version')) or 0) + 1, now)
    redis.call('HSET', KEYS[1], 'version', version)
  else
    version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  end
  local untilMs = 0
  if state == 'OPEN' then untilMs = now + wait end
  redis.call('HSET', KEYS[1], 'state', state, 'until', untilMs, 'replica', replica, 'cause', cause)
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) elseif ttl < 0 then redis.call('PERSIST', KEYS[1]) end
  redis.call('DEL', KEYS[2], KEYS[3])
  subject.s = state
  subject.r = (state == 'OPEN') and wait or 0
  subject.v = version
  subject.p = replica
  subject.c = cause
  local message = cjson.encode(subject)
  redis.call('PUBLISH', channel, message)
  return message
end
`;

/**
 * A replica's OPEN report: ignored while the fleet is OPEN or set by hand;
 * else kept for its wait in a sorted set of reporters (scored by expiry),
 * and when the current reporters reach the quorum, the fleet opens.
 * KEYS: state, reports, probe. ARGV: subject, replica, quorum, waitMs, channel, ttl.
 */
const REPORT = `${NOW}${TRANSITION}
local fleet = redis.call('HMGET', KEYS[1], 'state', 'until')
local state = fleet[1]
if state == 'FORCED_OPEN' or state == 'DISABLED' or state == 'METRICS_ONLY' then return false end
if state == 'OPEN' and tonumber(fleet[2]) > now then return false end
local wait = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + wait, ARGV[2])
redis.call('PEXPIRE', KEYS[2], math.ceil(wait))
if redis.call('ZCARD', KEYS[2]) < tonumber(ARGV[3]) then return false end
return transition(cjson.decode(ARGV[1]), 'OPEN', wait, ARGV[2], 'quorum', ARGV[5], tonumber(ARGV[6]))
`;

/** KEYS: state, reports, probe. ARGV: subject, replica, state, waitMs, cause, channel, ttl. */
const PUBLISH = `${NOW}${TRANSITION}
return transition(cjson.decode(ARGV[1]), ARGV[3], tonumber(ARGV[4]), ARGV[2], ARGV[5], ARGV[6], tonumber(ARGV[7]))
`;

/** The last transition, its OPEN wait counted down on Redis's clock. KEYS: state. ARGV: subject. */
const READ = `${NOW}
local f = redis.call('HMGET', KEYS[1], 'state', 'until', 'version', 'replica', 'cause')
if not f[1] then return false end
local left = 0
if f[1] == 'OPEN' then left = math.max(0, tonumber(f[2]) - now) end
local last = cjson.decode(ARGV[1])
last.s = f[1]
last.r = left
last.v = tonumber(f[3])
last.p = f[4]
last.c = f[5]
return cjson.encode(last)
`;

/** The probe lease: one holder, for its time. KEYS: probe. ARGV: replica, leaseMs. */
const CLAIM = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;

/** Gives the probe lease back, if this replica holds it. KEYS: probe. ARGV: replica. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** A script and its SHA-1, for EVALSHA. */
interface Script {
  readonly text: string;
  readonly sha: string;
}

const script = (text: string): Script => ({ text, sha: createHash('sha1').update(text).digest('hex') });
const SCRIPTS = {
  report: script(REPORT),
  publish: script(PUBLISH),
  read: script(READ),
  claim: script(CLAIM),
  release: script(RELEASE),
};

/** A breaker as the messages name it: its name, and its key escaped ({@link escapeKey}) for the breaker of a key. */
interface EncodedSubject {
  n: string;
  k?: string;
}

/** A transition as the scripts encode it. */
interface EncodedTransition extends EncodedSubject {
  s: FleetTransition['state'];
  r: number;
  v: number;
  p: string;
  c: FleetTransition['cause'];
}

/** Characters a key keeps as they are in Redis keys and messages; every other UTF-16 unit is escaped. */
const PLAIN = /[A-Za-z0-9._-]/;

/**
 * `key` with every UTF-16 unit but letters, digits, `.`, `_` and `-`
 * written `%XX` (`%uXXXX` above U+00FF): no brace, bar or colon is left,
 * so a key cannot end the hash tag nor pass for another name or key, and
 * any string (a lone surrogate included) comes back whole from {@link unescapeKey}.
 */
function escapeKey(key: string): string {
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    if (PLAIN.test(c)) out += c;
    else {
      const unit = key.charCodeAt(i);
      out +=
        unit > 0xff
          ? `%u${unit.toString(16).toUpperCase().padStart(4, '0')}`
          : `%${unit.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** The longest escaped key a Redis key name holds as it is; a longer one is named by its digest. */
const LONGEST_KEY_IN_NAME = 200;

/**
 * `key` as the Redis key names of its state hold it: escaped, or `#` and
 * the SHA-256 of the escaped key when that is longer than
 * {@link LONGEST_KEY_IN_NAME} (an escaped key never starts with `#`, so
 * the two forms cannot meet). Messages carry the escaped key whole.
 */
function keyInName(key: string): string {
  const escaped = escapeKey(key);
  return escaped.length <= LONGEST_KEY_IN_NAME ? escaped : `#${createHash('sha256').update(escaped).digest('hex')}`;
}

/** The key {@link escapeKey} escaped. */
function unescapeKey(escaped: string): string {
  return escaped.replace(
    /%u([0-9A-F]{4})|%([0-9A-F]{2})/g,
    (_all, wide: string | undefined, narrow: string | undefined) =>
      String.fromCharCode(parseInt(wide ?? (narrow as string), 16)),
  );
}

function decode(text: string): FleetTransition {
  const t = JSON.parse(text) as EncodedTransition;
  return {
    name: t.n,
    key: t.k === undefined ? undefined : unescapeKey(t.k),
    state: t.s,
    remainingMs: t.r,
    version: t.v,
    replica: t.p,
    cause: t.c,
  };
}

/** The subject argument of the scripts: the JSON of {@link EncodedSubject}. */
function subject(name: string, key: string | undefined): string {
  const encoded: EncodedSubject = key === undefined ? { n: name } : { n: name, k: escapeKey(key) };
  return JSON.stringify(encoded);
}

/**
 * How long the state hash of a transition to `state` (for `waitMs` when
 * OPEN) is kept: a name's for good (0: no expiry set), a key's in a state
 * set by hand until it changes (-1), any other key's
 * `2 × waitMs + KEY_STATE_GRACE_MS`.
 */
function stateTtl(key: string | undefined, state: string, waitMs: number): number {
  if (key === undefined) return 0;
  if (SET_BY_HAND.has(state)) return -1;
  return 2 * Math.ceil(waitMs) + KEY_STATE_GRACE_MS;
}

/**
 * Shares fleet-wide circuit breakers' transitions through Redis. Per
 * breaker, one hash holds the fleet's state (state, end of the OPEN wait on
 * Redis's clock, version), a sorted set the replicas reporting OPEN (each
 * until its wait ends), and one key the half-open probe lease
 * (`SET NX PX`). Every transition is published on one channel, heard on a
 * second connection (`client.duplicate()`). Each operation is one Lua
 * script, so a quorum is counted and the fleet opened in one atomic step.
 * Keys of one breaker share a hash tag, so the store also runs on a Redis
 * Cluster. The breaker of a key of a name has keys of its own, its key
 * escaped, and its state hash expires (`2 × wait + 1 min` after its last
 * transition; kept while set by hand). Calls never wait on it: see
 * docs/fleet-breaker.md.
 *
 * @example
 * ```ts
 * ResilienceModule.forRoot({
 *   circuitBreakerStore: new RedisCircuitBreakerStore({ client: new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) }),
 *   circuitBreaker: { instances: { payments: { shared: { quorum: 2 } } } },
 * });
 * ```
 */
export class RedisCircuitBreakerStore implements CircuitBreakerStore {
  private readonly client: RedisCircuitBreakerClient;
  private readonly prefix: string;
  private readonly channel: string;

  /** @param options - the client and key prefix */
  constructor(options: RedisCircuitBreakerStoreOptions) {
    this.client = options.client;
    this.prefix = options.prefix ?? DEFAULT_CIRCUIT_BREAKER_REDIS_PREFIX;
    this.channel = `${this.prefix}transitions`;
  }

  /** {@inheritDoc CircuitBreakerStore.reportOpen} */
  async reportOpen(report: FleetOpenReport): Promise<FleetTransition | undefined> {
    const reply = await this.run(
      SCRIPTS.report,
      this.keys(report.name, report.key),
      subject(report.name, report.key),
      report.replica,
      report.quorum,
      Math.ceil(report.waitMs),
      this.channel,
      stateTtl(report.key, 'OPEN', report.waitMs),
    );
    return typeof reply === 'string' ? decode(reply) : undefined;
  }

  /** {@inheritDoc CircuitBreakerStore.publish} */
  async publish(publication: FleetPublication): Promise<FleetTransition> {
    const reply = await this.run(
      SCRIPTS.publish,
      this.keys(publication.name, publication.key),
      subject(publication.name, publication.key),
      publication.replica,
      publication.state,
      Math.ceil(publication.waitMs),
      publication.cause,
      this.channel,
      stateTtl(publication.key, publication.state, publication.state === 'OPEN' ? publication.waitMs : 0),
    );
    return decode(String(reply));
  }

  /** {@inheritDoc CircuitBreakerStore.claimProbe} */
  async claimProbe(claim: FleetProbeClaim): Promise<boolean> {
    const reply = await this.run(
      SCRIPTS.claim,
      [this.key(claim.name, claim.key, 'probe')],
      claim.replica,
      Math.ceil(claim.leaseMs),
    );
    return reply === 1;
  }

  /** {@inheritDoc CircuitBreakerStore.releaseProbe} */
  async releaseProbe(release: FleetProbeRelease): Promise<boolean> {
    const reply = await this.run(SCRIPTS.release, [this.key(release.name, release.key, 'probe')], release.replica);
    return reply === 1;
  }

  /** {@inheritDoc CircuitBreakerStore.read} */
  async read(name: string, key?: string): Promise<FleetTransition | undefined> {
    const reply = await this.run(SCRIPTS.read, [this.key(name, key, 'state')], subject(name, key));
    return typeof reply === 'string' ? decode(reply) : undefined;
  }

  /**
   * Starts listening on a second connection (`client.duplicate()`); resolves
   * once the first subscription was answered, with the function that stops.
   * Never fails for Redis being down: the listener hears `disconnected`,
   * and `reconnected` once the channel is subscribed again.
   */
  async listen(listener: FleetListener): Promise<() => Promise<void>> {
    const subscriber = this.client.duplicate();
    let connected = false;
    let stopped = false;
    const lost = (error: unknown): void => {
      if (stopped || !connected) return;
      connected = false;
      listener.disconnected(error);
    };
    // Subscribed (again) on every connection, the first one included, before the listener hears it is back.
    const subscribe = (): Promise<void> =>
      subscriber.subscribe(this.channel).then(
        () => {
          if (stopped || connected) return;
          connected = true;
          listener.reconnected();
        },
        (error: unknown) => {
          if (!stopped) listener.disconnected(error);
        },
      );
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) listener.transition(decode(message));
    });
    subscriber.on('error', lost);
    subscriber.on('close', () => lost(new Error('connection to Redis closed')));
    subscriber.on('ready', () => void subscribe());
    await subscribe();
    return async () => {
      stopped = true;
      await subscriber.quit().catch(() => undefined);
    };
  }

  /**
   * One hash tag per breaker: its keys sit in one Cluster slot, as a script
   * needs. A name's end in `}:part`, a key's in `}:key:part` after the name,
   * a bar and the key as `keyInName` writes it (holding no bar or
   * brace), so none can pass for another.
   */
  private key(name: string, key: string | undefined, part: 'state' | 'reports' | 'probe'): string {
    return key === undefined
      ? `${this.prefix}{${name}}:${part}`
      : `${this.prefix}{${name}|${keyInName(key)}}:key:${part}`;
  }

  private keys(name: string, key: string | undefined): string[] {
    return [this.key(name, key, 'state'), this.key(name, key, 'reports'), this.key(name, key, 'probe')];
  }

  private async run(script: Script, keys: readonly string[], ...args: (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      // The script cache is empty after a Redis restart or failover; EVAL reloads it.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(script.text, keys.length, ...keys, ...args);
    }
  }
}
