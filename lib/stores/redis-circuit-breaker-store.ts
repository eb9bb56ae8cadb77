import { createHash } from 'node:crypto';
import {
  CircuitBreakerStore,
  FleetListener,
  FleetOpenReport,
  FleetProbeClaim,
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

/** Sets the fleet's state, clears the reports and the probe lease, publishes: the tail of REPORT and PUBLISH. */
const TRANSITION = `
local function transition(name, state, wait, replica, cause, channel)
  local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
  local untilMs = 0
  if state == 'OPEN' then untilMs = now + wait end
  redis.call('HSET', KEYS[1], 'state', state, 'until', untilMs, 'replica', replica, 'cause', cause)
  redis.call('DEL', KEYS[2], KEYS[3])
  local message = cjson.encode({n = name, s = state, r = (state == 'OPEN') and wait or 0, v = version, p = replica, c = cause})
  redis.call('PUBLISH', channel, message)
  return message
end
`;

/**
 * A replica's OPEN report: ignored while the fleet is OPEN or set by hand;
 * else kept for its wait in a sorted set of reporters (scored by expiry),
 * and when the current reporters reach the quorum, the fleet opens.
 * KEYS: state, reports, probe. ARGV: name, replica, quorum, waitMs, channel.
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
return transition(ARGV[1], 'OPEN', wait, ARGV[2], 'quorum', ARGV[5])
`;

/** KEYS: state, reports, probe. ARGV: name, replica, state, waitMs, cause, channel. */
const PUBLISH = `${NOW}${TRANSITION}
return transition(ARGV[1], ARGV[3], tonumber(ARGV[4]), ARGV[2], ARGV[5], ARGV[6])
`;

/** The last transition, its OPEN wait counted down on Redis's clock. KEYS: state. ARGV: name. */
const READ = `${NOW}
local f = redis.call('HMGET', KEYS[1], 'state', 'until', 'version', 'replica', 'cause')
if not f[1] then return false end
local left = 0
if f[1] == 'OPEN' then left = math.max(0, tonumber(f[2]) - now) end
return cjson.encode({n = ARGV[1], s = f[1], r = left, v = tonumber(f[3]), p = f[4], c = f[5]})
`;

/** The probe lease: one holder, for its time. KEYS: probe. ARGV: replica, leaseMs. */
const CLAIM = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;

/** A script and its SHA-1, for EVALSHA. */
interface Script {
  readonly text: string;
  readonly sha: string;
}

const script = (text: string): Script => ({ text, sha: createHash('sha1').update(text).digest('hex') });
const SCRIPTS = { report: script(REPORT), publish: script(PUBLISH), read: script(READ), claim: script(CLAIM) };

/** A transition as the scripts encode it. */
interface EncodedTransition {
  n: string;
  s: FleetTransition['state'];
  r: number;
  v: number;
  p: string;
  c: FleetTransition['cause'];
}

function decode(text: string): FleetTransition {
  const t = JSON.parse(text) as EncodedTransition;
  return { name: t.n, state: t.s, remainingMs: t.r, version: t.v, replica: t.p, cause: t.c };
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
 * Cluster. Calls never wait on it: see docs/fleet-breaker.md.
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
      this.keys(report.name),
      report.name,
      report.replica,
      report.quorum,
      Math.ceil(report.waitMs),
      this.channel,
    );
    return typeof reply === 'string' ? decode(reply) : undefined;
  }

  /** {@inheritDoc CircuitBreakerStore.publish} */
  async publish(publication: FleetPublication): Promise<FleetTransition> {
    const reply = await this.run(
      SCRIPTS.publish,
      this.keys(publication.name),
      publication.name,
      publication.replica,
      publication.state,
      Math.ceil(publication.waitMs),
      publication.cause,
      this.channel,
    );
    return decode(String(reply));
  }

  /** {@inheritDoc CircuitBreakerStore.claimProbe} */
  async claimProbe(claim: FleetProbeClaim): Promise<boolean> {
    const reply = await this.run(
      SCRIPTS.claim,
      [this.key(claim.name, 'probe')],
      claim.replica,
      Math.ceil(claim.leaseMs),
    );
    return reply === 1;
  }

  /** {@inheritDoc CircuitBreakerStore.read} */
  async read(name: string): Promise<FleetTransition | undefined> {
    const reply = await this.run(SCRIPTS.read, [this.key(name, 'state')], name);
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

  private key(name: string, part: 'state' | 'reports' | 'probe'): string {
    // One hash tag per breaker: its keys sit in one Cluster slot, as a script needs.
    return `${this.prefix}{${name}}:${part}`;
  }

  private keys(name: string): string[] {
    return [this.key(name, 'state'), this.key(name, 'reports'), this.key(name, 'probe')];
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
