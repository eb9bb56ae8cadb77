import { randomUUID } from 'node:crypto';
import { Clock } from '../clock';
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

const STORE = 'MemoryIdempotencyStore';

interface Entry {
  fingerprint: string;
  createdAt: number;
  expiresAt: number;
  /** Owner of an in-progress entry; `undefined` once completed. */
  token: string | undefined;
  leaseExpiresAt: number;
  /** Serialized answer of a completed entry, so callers never share mutable objects with the store. */
  response: string | undefined;
}

/** Options of {@link MemoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions {
  /** Source of time; default {@link wallClock}. Pass a `VirtualClock` in tests. */
  readonly clock?: Clock;
}

/**
 * The default store: keys in a `Map` of this process. Claims are atomic
 * because each method runs to completion without awaiting. Keys are not
 * shared between instances of a service and do not survive a restart; use
 * {@link PostgresIdempotencyStore} or {@link RedisIdempotencyStore} for that.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();

  /** @param options the clock to read time from */
  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    this.clock = options.clock ?? wallClock;
  }

  /** {@inheritDoc IdempotencyStore.claim} */
  async claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    const { leaseMs, ttlMs } = claimDurations(STORE, options);
    const now = this.clock.now();
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt <= now) {
      const token = randomUUID();
      const fresh: Entry = { fingerprint, createdAt: now, expiresAt: now + ttlMs, token, leaseExpiresAt: now + leaseMs, response: undefined };
      this.entries.set(key, fresh);
      return { outcome: 'claimed', token, record: inProgress(key, fresh) };
    }
    if (entry.fingerprint !== fingerprint) return { outcome: 'fingerprint_mismatch' };
    if (entry.response !== undefined) {
      return { outcome: 'completed', record: { key, state: 'completed', fingerprint, createdAt: entry.createdAt, expiresAt: entry.expiresAt, response: decodeResponse(entry.response) } };
    }
    if (entry.leaseExpiresAt > now) {
      return { outcome: 'in_progress', record: inProgress(key, entry), retryAfterMs: entry.leaseExpiresAt - now };
    }
    const stale = inProgress(key, entry);
    entry.token = randomUUID();
    entry.leaseExpiresAt = now + leaseMs;
    entry.expiresAt = Math.max(entry.expiresAt, entry.leaseExpiresAt);
    return { outcome: 'stale', token: entry.token, record: stale };
  }

  /** {@inheritDoc IdempotencyStore.complete} */
  async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    const ttl = storeDuration(STORE, 'ttlMs', ttlMs, DEFAULT_IDEMPOTENCY_TTL_MS);
    const encoded = encodeResponse(response);
    const entry = this.owned(key, token);
    if (entry === undefined) return false;
    entry.token = undefined;
    entry.response = encoded;
    entry.expiresAt = this.clock.now() + ttl;
    return true;
  }

  /** {@inheritDoc IdempotencyStore.release} */
  async release(key: string, token: string): Promise<boolean> {
    return this.owned(key, token) !== undefined && this.entries.delete(key);
  }

  /** {@inheritDoc IdempotencyStore.renew} */
  async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    const lease = storeDuration(STORE, 'leaseMs', leaseMs, DEFAULT_IDEMPOTENCY_LEASE_MS);
    const entry = this.owned(key, token);
    if (entry === undefined) return false;
    entry.leaseExpiresAt = this.clock.now() + lease;
    entry.expiresAt = Math.max(entry.expiresAt, entry.leaseExpiresAt);
    return true;
  }

  /** {@inheritDoc IdempotencyStore.get} */
  async get(key: string): Promise<IdempotencyRecord | undefined> {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.expiresAt <= this.clock.now()) return undefined;
    if (entry.response === undefined) return inProgress(key, entry);
    return { key, state: 'completed', fingerprint: entry.fingerprint, createdAt: entry.createdAt, expiresAt: entry.expiresAt, response: decodeResponse(entry.response) };
  }

  /** {@inheritDoc IdempotencyStore.cleanupExpired} */
  async cleanupExpired(): Promise<number> {
    const now = this.clock.now();
    let deleted = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.entries.delete(key);
        deleted++;
      }
    }
    return deleted;
  }

  private owned(key: string, token: string): Entry | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.token === token ? entry : undefined;
  }
}

function inProgress(key: string, entry: Entry): InProgressRecord {
  return { key, state: 'in_progress', fingerprint: entry.fingerprint, createdAt: entry.createdAt, expiresAt: entry.expiresAt, leaseExpiresAt: entry.leaseExpiresAt };
}
