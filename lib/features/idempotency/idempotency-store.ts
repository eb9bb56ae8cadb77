import { Clock } from '../../kernel/clock';
import { INVALID_STORE_DURATION } from './idempotency.messages';

/** How long a completed (or abandoned) record is kept: 24 h, as Stripe keeps its keys. */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** How long a claim holds the key before another request may reconcile it: 30 s. */
export const DEFAULT_IDEMPOTENCY_LEASE_MS = 30 * 1000;

/**
 * The default clock of the stores: wall-clock milliseconds (`Date.now()`).
 * Records hold absolute expiry times that several processes compare, so a
 * per-process monotonic clock such as `systemClock` would not do.
 */
export const wallClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** An HTTP answer as the client saw it, kept so a duplicate request gets it again. */
export interface StoredHttpResponse {
  /** Always `'http'`: an HTTP answer, replayed as status, headers and body. */
  readonly kind: 'http';
  /** Status code sent. */
  readonly status: number;
  /** The allow-listed response headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body exactly as sent: its text when the bytes are UTF-8, else the bytes in base64 (`encoding`). */
  readonly body: string;
  /** `'base64'` when the body's bytes are not UTF-8 text (an image, ISO-8859-1 text); absent for UTF-8. */
  readonly encoding?: 'base64';
  /**
   * Set when the body was sent but not kept (`body` is empty): `'streamed'`
   * (written in parts, e.g. a `StreamableFile`) or `'too-large'` (over
   * `maxStoredBytes`). A replay gives the status and headers only.
   */
  readonly omitted?: 'streamed' | 'too-large';
}

/** The value a non-HTTP method (a message handler) returned; must be JSON-serializable. */
export interface StoredResult {
  /** Always `'result'`: a method's return value, returned again. */
  readonly kind: 'result';
  /** The returned value; `undefined` for a method that returns nothing. */
  readonly value?: unknown;
}

/** What a completed record replays. */
export type StoredResponse = StoredHttpResponse | StoredResult;

/** Fields every record has. Times are absolute milliseconds on the store's clock. */
export interface RecordBase {
  /** The scoped key (principal, method, route and client key, as the caller built it). */
  readonly key: string;
  /** Hash of the request the key was first used with. */
  readonly fingerprint: string;
  /** When the key was first claimed; kept across takeovers, so it identifies the logical operation. */
  readonly createdAt: number;
  /** When the record may be forgotten and the key claimed afresh. */
  readonly expiresAt: number;
}

/** A key whose request is running (or whose runner died before finishing). */
export interface InProgressRecord extends RecordBase {
  /** Always `'in_progress'`: claimed, with no answer stored yet. */
  readonly state: 'in_progress';
  /** Until when the owner holds the key; after it, the record is stale and may be taken over. */
  readonly leaseExpiresAt: number;
}

/** A key whose request finished with a stored answer. */
export interface CompletedRecord extends RecordBase {
  /** Always `'completed'`: the answer is stored and replayed. */
  readonly state: 'completed';
  /** The answer to replay. */
  readonly response: StoredResponse;
}

/** The state of one idempotency key. */
export type IdempotencyRecord = InProgressRecord | CompletedRecord;

/**
 * The answer to `IdempotencyStore.claim()`. Only `claimed` and `stale`
 * hand out an owner token; every other outcome leaves the record untouched.
 */
export type ClaimResult =
  /** The key was free (absent or past its TTL): the caller owns it and runs the work. */
  | { readonly outcome: 'claimed'; readonly token: string; readonly record: InProgressRecord }
  /**
   * The key was `in_progress` past its lease: the caller now owns it (new token,
   * new lease), and `record` is the stale record as found. Resolve or resume it
   * through a reconciler before running the work again: the previous owner may
   * have had its effect.
   */
  | { readonly outcome: 'stale'; readonly token: string; readonly record: InProgressRecord }
  /** Another owner holds the lease; `retryAfterMs` is the time left on it. */
  | { readonly outcome: 'in_progress'; readonly record: InProgressRecord; readonly retryAfterMs: number }
  /** The key finished; replay `record.response`. */
  | { readonly outcome: 'completed'; readonly record: CompletedRecord }
  /** The key was used with another request fingerprint (checked before any state). */
  | { readonly outcome: 'fingerprint_mismatch' }
  /**
   * The key is new and the store will not take it now: the principal holds
   * as many keys as it may (`scope: 'principal'`), or the store is full
   * (`'store'`). `retryAfterMs`: until a key that counts expires.
   */
  | { readonly outcome: 'quota_exceeded'; readonly scope: 'principal' | 'store'; readonly retryAfterMs: number };

/** Durations of one claim. */
export interface ClaimOptions {
  /** Lease of the claim in ms; default {@link DEFAULT_IDEMPOTENCY_LEASE_MS}. */
  readonly leaseMs?: number;
  /** Lifetime of the record in ms (never shorter than the lease); default {@link DEFAULT_IDEMPOTENCY_TTL_MS}. */
  readonly ttlMs?: number;
  /**
   * Who is asking (the route's resolved principal; absent with `'shared'`
   * and for keyed calls), for a store that bounds the keys one principal
   * holds (`MemoryIdempotencyStore`'s `maxKeysPerPrincipal`).
   */
  readonly principal?: string;
}

/**
 * Where idempotency keys live. Every method is atomic on its own: two
 * processes sharing a store never both own a key, and a token that lost its
 * key cannot change the record.
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for a request with `fingerprint`. A live record with another
   * fingerprint answers `fingerprint_mismatch` whatever its state; otherwise
   * a completed record answers `completed`, a leased one `in_progress`, a
   * stale one is taken over (`stale`), and a missing or expired one is
   * claimed (`claimed`).
   */
  claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult>;

  /**
   * Stores the answer and marks the key completed for `ttlMs` (default 24 h)
   * from now, if `token` still owns it. Returns whether it did.
   */
  complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean>;

  /** Deletes the in-progress record if `token` owns it, so the key may run again. Returns whether it did. */
  release(key: string, token: string): Promise<boolean>;

  /** Extends the owner's lease to `leaseMs` (default 30 s) from now. Returns whether `token` still owns the key. */
  renew(key: string, token: string, leaseMs?: number): Promise<boolean>;

  /** The live record of `key`, or `undefined` when there is none or it expired. */
  get(key: string): Promise<IdempotencyRecord | undefined>;

  /** Deletes every expired record; returns how many it deleted. */
  cleanupExpired(): Promise<number>;

  /**
   * Optional: a warning, logged at startup, when the store can see that
   * keys would not survive a restart of its server.
   */
  durabilityWarning?(): Promise<string | undefined>;
}

/**
 * Injection token of the `IdempotencyStore` in use; the interface and
 * the token share one name, as `ThrottlerStorage` does in `@nestjs/throttler`.
 */
export const IdempotencyStore = Symbol('IdempotencyStore');

/** Lease and TTL of one claim, validated and made whole milliseconds. */
export interface ClaimDurations {
  /** Whole ms of lease. */
  readonly leaseMs: number;
  /** Whole ms of record lifetime, at least the lease. */
  readonly ttlMs: number;
}

/** Validates a duration given to a store method and rounds it up to whole ms. */
export function storeDuration(store: string, setting: string, value: number | undefined, fallback: number): number {
  const ms = value ?? fallback;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0)
    throw new RangeError(INVALID_STORE_DURATION(store, setting, ms));
  return Math.ceil(ms);
}

/** Resolves and validates the durations of a claim. */
export function claimDurations(store: string, options: ClaimOptions | undefined): ClaimDurations {
  const leaseMs = storeDuration(store, 'leaseMs', options?.leaseMs, DEFAULT_IDEMPOTENCY_LEASE_MS);
  const ttlMs = storeDuration(store, 'ttlMs', options?.ttlMs, DEFAULT_IDEMPOTENCY_TTL_MS);
  return { leaseMs, ttlMs: Math.max(ttlMs, leaseMs) };
}

/** Serializes a response for storage; every store keeps the same JSON text, so they replay alike. */
export function encodeResponse(response: StoredResponse): string {
  return JSON.stringify(response);
}

/** Reads a response written by {@link encodeResponse}. */
export function decodeResponse(text: string): StoredResponse {
  return JSON.parse(text) as StoredResponse;
}
