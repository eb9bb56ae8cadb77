import { Clock, TimerHandle } from '../../kernel/clock';
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
  InProgressRecord,
  StoredResponse,
  storeDuration,
  wallClock,
} from './idempotency-store';
import { INVALID_STORE_COUNT } from './idempotency.messages';
import { ownerToken } from './owner-token';

const STORE = 'MemoryIdempotencyStore';

/** Live keys held when `maxKeys` is not given. */
export const DEFAULT_MEMORY_STORE_MAX_KEYS = 100_000;

/** Share of `maxKeys` one principal may hold when `maxKeysPerPrincipal` is not given. */
const DEFAULT_PRINCIPAL_SHARE = 10;

/** Expired keys are freed on whole-second sweeps: at most a second late, and at most one sweep a second. */
const SWEEP_GRANULARITY_MS = 1_000;

/** Stale heap items tolerated beyond twice the live keys before the heap is rebuilt. */
const COMPACT_SLACK = 1_024;

/** Longest single wait of the sweep timer; a later expiry is reached in steps, since Node's timers overflow past 2^31-1 ms. */
const MAX_TIMER_MS = 60 * 60 * 1_000;

interface Entry {
  fingerprint: string;
  createdAt: number;
  expiresAt: number;
  /** Owner of an in-progress entry; `undefined` once completed. */
  token: string | undefined;
  leaseExpiresAt: number;
  /** Serialized answer of a completed entry, so callers never share mutable objects with the store. */
  response: string | undefined;
  /** The keys of the principal that claimed it, when one was given. */
  readonly held: PrincipalKeys | undefined;
  /** The principal's key claimed just before this one, and just after (a list, so a principal costs no map of its own). */
  older: Entry | undefined;
  newer: Entry | undefined;
}

/** One principal's live keys, oldest claim first. */
interface PrincipalKeys {
  readonly principal: string;
  count: number;
  oldest: Entry | undefined;
  newest: Entry | undefined;
}

/** When a key is due to expire; an entry whose expiry moved later leaves a stale one behind, skipped when reached. */
interface Expiry {
  readonly at: number;
  readonly key: string;
}

/** Options of {@link MemoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions {
  /** Source of time; default the system clock (`Date.now`). Pass a `VirtualClock` in tests. */
  readonly clock?: Clock;
  /**
   * Most live keys held at once; default {@link DEFAULT_MEMORY_STORE_MAX_KEYS}.
   * When full, a new key is refused (the request gets 503
   * `IdempotencyStoreUnavailableError`) until older keys expire: evicting a
   * live key could run its operation twice. `Retry-After` says when the
   * earliest key expires.
   */
  readonly maxKeys?: number;
  /**
   * Most live keys one principal (the route's resolved `principal`) holds at
   * once; default a tenth of `maxKeys` (10,000), so that no one caller can
   * fill the store and lock the others out. Over it, that principal's new
   * keys get 429 `IdempotencyKeyQuotaExceededError`, with `Retry-After`
   * until its oldest key expires, while other principals still get keys.
   * Keys claimed without a principal (`principal: 'shared'`, keyed calls)
   * count only towards `maxKeys`.
   */
  readonly maxKeysPerPrincipal?: number;
}

/**
 * The default store: keys in a `Map` of this process. Claims are atomic
 * because each method runs to completion without awaiting. Expired keys are
 * freed by the store itself within about a second of expiring, and at most
 * `maxKeys` live keys are held, at most `maxKeysPerPrincipal` of them by one
 * principal. Keys are not shared between instances of a
 * service and do not survive a restart; use {@link PostgresIdempotencyStore}
 * or {@link RedisIdempotencyStore} for that. Call {@link MemoryIdempotencyStore.close}
 * when done with it outside Nest (the module closes it on shutdown).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly clock: Clock;
  private readonly maxKeys: number;
  private readonly maxKeysPerPrincipal: number;
  private readonly entries = new Map<string, Entry>();
  /** Each principal's live keys, in the order they were claimed. */
  private readonly principals = new Map<string, PrincipalKeys>();
  /** Min-heap of expiries, earliest first. */
  private readonly expiries: Expiry[] = [];
  // undefined while no expiry is scheduled (TimerHandle admits it).
  private timer: TimerHandle;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  /** @param options - the clock to read time from and the bounds on live keys */
  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    this.clock = options.clock ?? wallClock;
    this.maxKeys = positiveCount('maxKeys', options.maxKeys ?? DEFAULT_MEMORY_STORE_MAX_KEYS);
    this.maxKeysPerPrincipal = positiveCount(
      'maxKeysPerPrincipal',
      options.maxKeysPerPrincipal ?? Math.max(1, Math.floor(this.maxKeys / DEFAULT_PRINCIPAL_SHARE)),
    );
  }

  /** Keys held right now, expired ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  /** {@inheritDoc IdempotencyStore#claim} */
  async claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    const { leaseMs, ttlMs } = claimDurations(STORE, options);
    const now = this.clock.now();
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt <= now) {
      if (entry !== undefined) this.forget(key, entry);
      const principal = options?.principal;
      if (principal !== undefined && this.heldBy(principal) >= this.maxKeysPerPrincipal) {
        this.sweep(now);
        const oldest = this.principals.get(principal)?.oldest;
        if (oldest !== undefined && this.heldBy(principal) >= this.maxKeysPerPrincipal) {
          // The oldest claim; a completed key's expiry moved later, so this may overstate the wait, never understate it.
          return { outcome: 'quota_exceeded', scope: 'principal', retryAfterMs: oldest.expiresAt - now };
        }
      }
      if (this.entries.size >= this.maxKeys) {
        this.sweep(now);
        if (this.entries.size >= this.maxKeys)
          return { outcome: 'quota_exceeded', scope: 'store', retryAfterMs: this.earliestExpiry() - now };
      }
      const token = ownerToken();
      const held = principal === undefined ? undefined : this.keysOf(principal);
      const fresh: Entry = {
        fingerprint,
        createdAt: now,
        expiresAt: now + ttlMs,
        token,
        leaseExpiresAt: now + leaseMs,
        response: undefined,
        held,
        older: held?.newest,
        newer: undefined,
      };
      this.entries.set(key, fresh);
      if (held !== undefined) {
        if (held.newest === undefined) held.oldest = fresh;
        else held.newest.newer = fresh;
        held.newest = fresh;
        held.count++;
      }
      this.expireAt(key, fresh.expiresAt);
      return { outcome: 'claimed', token, record: inProgress(key, fresh) };
    }
    if (entry.fingerprint !== fingerprint) return { outcome: 'fingerprint_mismatch' };
    if (entry.response !== undefined) {
      return {
        outcome: 'completed',
        record: {
          key,
          state: 'completed',
          fingerprint,
          createdAt: entry.createdAt,
          expiresAt: entry.expiresAt,
          response: decodeResponse(entry.response),
        },
      };
    }
    if (entry.leaseExpiresAt > now) {
      return { outcome: 'in_progress', record: inProgress(key, entry), retryAfterMs: entry.leaseExpiresAt - now };
    }
    const stale = inProgress(key, entry);
    entry.token = ownerToken();
    entry.leaseExpiresAt = now + leaseMs;
    this.extend(key, entry, entry.leaseExpiresAt);
    return { outcome: 'stale', token: entry.token, record: stale };
  }

  /** {@inheritDoc IdempotencyStore#complete} */
  async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    const ttl = storeDuration(STORE, 'ttlMs', ttlMs, DEFAULT_IDEMPOTENCY_TTL_MS);
    const encoded = encodeResponse(response);
    const entry = this.owned(key, token);
    if (entry === undefined) return false;
    entry.token = undefined;
    entry.response = encoded;
    entry.expiresAt = this.clock.now() + ttl;
    this.expireAt(key, entry.expiresAt);
    return true;
  }

  /** {@inheritDoc IdempotencyStore#release} */
  async release(key: string, token: string): Promise<boolean> {
    const entry = this.owned(key, token);
    if (entry === undefined) return false;
    this.forget(key, entry);
    return true;
  }

  /** {@inheritDoc IdempotencyStore#renew} */
  async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    const lease = storeDuration(STORE, 'leaseMs', leaseMs, DEFAULT_IDEMPOTENCY_LEASE_MS);
    const entry = this.owned(key, token);
    if (entry === undefined) return false;
    entry.leaseExpiresAt = this.clock.now() + lease;
    this.extend(key, entry, entry.leaseExpiresAt);
    return true;
  }

  /** {@inheritDoc IdempotencyStore#get} */
  async get(key: string): Promise<IdempotencyRecord | undefined> {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt <= this.clock.now()) return undefined;
    if (entry.response === undefined) return inProgress(key, entry);
    return {
      key,
      state: 'completed',
      fingerprint: entry.fingerprint,
      createdAt: entry.createdAt,
      expiresAt: entry.expiresAt,
      response: decodeResponse(entry.response),
    };
  }

  /** {@inheritDoc IdempotencyStore#cleanupExpired} */
  async cleanupExpired(): Promise<number> {
    const now = this.clock.now();
    let deleted = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.forget(key, entry);
        deleted++;
      }
    }
    return deleted;
  }

  /**
   * Stops the sweep timer for good; expired keys are then only skipped,
   * not freed. The module calls it on application shutdown.
   */
  close(): void {
    this.closed = true;
    this.cancelTimer();
  }

  private owned(key: string, token: string): Entry | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.token === token ? entry : undefined;
  }

  /** Moves an entry's expiry later to cover `until` (a lease may outlast the record's TTL). */
  private extend(key: string, entry: Entry, until: number): void {
    // Stryker disable next-line EqualityOperator: setting an equal expiry again only leaves a heap item the sweep skips
    if (until <= entry.expiresAt) return;
    entry.expiresAt = until;
    this.expireAt(key, until);
  }

  private expireAt(key: string, at: number): void {
    // Released keys and moved expiries leave stale items; rebuilding from the live entries keeps the heap within twice their number.
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: rebuilds change cost only
    if (this.expiries.length >= 2 * this.entries.size + COMPACT_SLACK) this.rebuildExpiries();
    pushExpiry(this.expiries, { at, key });
    this.schedule(at);
  }

  private rebuildExpiries(): void {
    const heap = this.expiries;
    heap.length = 0;
    for (const [key, entry] of this.entries) pushExpiry(heap, { at: entry.expiresAt, key });
  }

  /** Deletes every key expired by `now`, earliest first. */
  private sweep(now: number): void {
    const heap = this.expiries;
    while (heap.length > 0 && heap[0].at <= now) {
      const { key } = popExpiry(heap);
      const entry = this.entries.get(key);
      if (entry !== undefined && entry.expiresAt <= now) this.forget(key, entry);
    }
  }

  /** When the earliest live key expires (stale heap items on top are dropped on the way). */
  private earliestExpiry(): number {
    const heap = this.expiries;
    while (heap.length > 0) {
      const { at, key } = heap[0];
      if (this.entries.get(key)?.expiresAt === at) return at;
      popExpiry(heap);
    }
    // Unreachable while keys are held: every live key has its expiry in the heap.
    return this.clock.now();
  }

  private heldBy(principal: string): number {
    return this.principals.get(principal)?.count ?? 0;
  }

  private keysOf(principal: string): PrincipalKeys {
    let held = this.principals.get(principal);
    if (held === undefined) {
      held = { principal, count: 0, oldest: undefined, newest: undefined };
      this.principals.set(principal, held);
    }
    return held;
  }

  /** Deletes `key`, and its place among its principal's keys. */
  private forget(key: string, entry: Entry): void {
    this.entries.delete(key);
    const held = entry.held;
    if (held === undefined) return;
    if (entry.older === undefined) held.oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) held.newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = entry.newer = undefined;
    if (--held.count === 0) this.principals.delete(held.principal);
  }

  /** Makes sure a sweep runs by the first whole second at or after `at`. */
  private schedule(at: number): void {
    if (this.closed) return;
    const due = Math.ceil(at / SWEEP_GRANULARITY_MS) * SWEEP_GRANULARITY_MS;
    if (due >= this.timerAt) return;
    this.cancelTimer();
    this.timerAt = due;
    const wait = Math.min(Math.max(0, due - this.clock.now()), MAX_TIMER_MS);
    this.timer = this.clock.setTimeout(() => this.onTimer(), wait);
    // Housekeeping never keeps a process alive on its own.
    (this.timer as { unref?: () => void } | undefined)?.unref?.();
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.sweep(this.clock.now());
    if (this.expiries.length > 0) this.schedule(this.expiries[0].at);
  }

  private cancelTimer(): void {
    // Clock.clearTimeout ignores a handle it does not know, undefined included.
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }
}

function positiveCount(setting: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(INVALID_STORE_COUNT(STORE, setting, value));
  return value;
}

function inProgress(key: string, entry: Entry): InProgressRecord {
  return {
    key,
    state: 'in_progress',
    fingerprint: entry.fingerprint,
    createdAt: entry.createdAt,
    expiresAt: entry.expiresAt,
    leaseExpiresAt: entry.leaseExpiresAt,
  };
}

function pushExpiry(heap: Expiry[], item: Expiry): void {
  let i = heap.push(item) - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    // Stryker disable next-line EqualityOperator: an item equal to its parent is in order above or below it
    if (heap[parent].at <= item.at) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = item;
}

function popExpiry(heap: Expiry[]): Expiry {
  const top = heap[0];
  const last = heap.pop() as Expiry;
  if (heap.length > 0) {
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      // Stryker disable next-line EqualityOperator: of two equal children either one keeps the heap in order
      const child = right < heap.length && heap[right].at < heap[left].at ? right : left;
      // Stryker disable next-line EqualityOperator: an item equal to the smaller child is in order above or below it
      if (heap[child].at >= last.at) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
  }
  return top;
}
