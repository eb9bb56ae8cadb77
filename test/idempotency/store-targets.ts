import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { Pool } from 'pg';
import { Clock } from '../../lib/kernel/clock';
import {
  IdempotencyStore,
  StoredResponse,
  ClaimOptions,
  ClaimResult,
  IdempotencyRecord,
} from '../../lib/features/idempotency/idempotency-store';
import { MemoryIdempotencyStore } from '../../lib/features/idempotency/memory-idempotency-store';
import { PostgresIdempotencyStore } from '../../lib/stores/postgres-idempotency-store';
import { RedisIdempotencyStore } from '../../lib/stores/redis-idempotency-store';
import { TestServerKind } from '../support/server-env';
import { Watch } from './http-kit';

/** One store backend for suites that run against all three. */
export interface StoreTarget {
  readonly name: string;
  readonly server?: TestServerKind;
  /** True when the store frees expired records itself, leaving none for `cleanupExpired`. */
  readonly evictsByItself?: boolean;
  /** Connects to the server (once per suite). */
  setup(url: string): Promise<void>;
  /** A store on a fresh namespace (table or key prefix), reading time from `clock`. */
  create(clock: Clock): IdempotencyStore;
  teardown(): Promise<void>;
}

/** The in-process store. */
export function memoryTarget(): StoreTarget {
  return {
    name: 'MemoryIdempotencyStore',
    evictsByItself: true,
    setup: async () => undefined,
    create: (clock) => new MemoryIdempotencyStore({ clock }),
    teardown: async () => undefined,
  };
}

/**
 * PostgreSQL, one fresh table per store, dropped at teardown.
 * @param suite - Names the suite in each table's name (`idem_<suite>_…`).
 */
export function postgresTarget(suite: string): StoreTarget & { pool(): Pool } {
  let pool: Pool | undefined;
  const tables: string[] = [];
  return {
    name: 'PostgresIdempotencyStore',
    server: 'postgres',
    async setup(url) {
      pool = new Pool({ connectionString: url, max: 20 });
    },
    create(clock) {
      const table = `idem_${suite}_${randomUUID().replace(/-/g, '')}`;
      tables.push(table);
      return new PostgresIdempotencyStore({ pool: pool as Pool, table, clock });
    },
    pool: () => pool as Pool,
    async teardown() {
      for (const table of tables.splice(0)) await pool?.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool?.end();
    },
  };
}

/**
 * Redis, one fresh key prefix per store.
 * @param suite - Names the suite in each prefix (`idem-<suite>:…`).
 */
export function redisTarget(suite: string): StoreTarget {
  let client: Redis | undefined;
  return {
    name: 'RedisIdempotencyStore',
    server: 'redis',
    async setup(url) {
      client = new Redis(url, { maxRetriesPerRequest: 1 });
    },
    create: (clock) =>
      new RedisIdempotencyStore({ client: client as Redis, prefix: `idem-${suite}:${randomUUID()}:`, clock }),
    async teardown() {
      await client?.quit();
    },
  };
}

/**
 * A store that passes every call through to `inner`, except those a test
 * makes fail, to show what happens when the store misbehaves mid-request.
 */
export class FaultyStore implements IdempotencyStore {
  /** `complete` throws while true (the store is unreachable when the answer is written). */
  failComplete = false;
  /** `renew` answers false while true (the owner cannot reach the store to keep its lease). */
  failRenew = false;
  /** `claim` throws while true (the store is down when a request arrives). */
  failClaim = false;
  /** `claim` never answers while true (the store hangs). */
  hangClaim = false;
  /** `release` throws while true (the store is unreachable when the key is freed). */
  failRelease = false;
  /** Calls begun so far, by method name, in order. */
  readonly started: string[] = [];
  /** Completions refused or thrown, in order. */
  readonly completions: Array<{ key: string; stored: boolean }> = [];
  /** Leases renewed so far. */
  renewals = 0;
  /** Notified after each renewal. */
  readonly watch = new Watch();

  constructor(private readonly inner: IdempotencyStore) {}

  claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    this.begin('claim');
    if (this.failClaim) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    if (this.hangClaim) return new Promise(() => undefined);
    return this.inner.claim(key, fingerprint, options);
  }

  private begin(operation: string): void {
    this.started.push(operation);
    this.watch.notify();
  }

  async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    this.begin('complete');
    if (this.failComplete) {
      this.completions.push({ key, stored: false });
      throw new Error('store unreachable');
    }
    const stored = await this.inner.complete(key, token, response, ttlMs);
    this.completions.push({ key, stored });
    return stored;
  }

  release(key: string, token: string): Promise<boolean> {
    if (this.failRelease) return Promise.reject(new Error('store unreachable'));
    return this.inner.release(key, token);
  }

  async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    if (this.failRenew) return false;
    const renewed = await this.inner.renew(key, token, leaseMs);
    if (renewed) this.renewals++;
    this.watch.notify();
    return renewed;
  }

  get(key: string): Promise<IdempotencyRecord | undefined> {
    return this.inner.get(key);
  }

  cleanupExpired(): Promise<number> {
    return this.inner.cleanupExpired();
  }
}
