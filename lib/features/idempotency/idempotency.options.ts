import { Clock, systemClock } from '../../kernel/clock';
import { describe } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import {
  booleanOption,
  durationOption,
  errorListOption,
  functionOption,
  GivenOptions,
  headerNameOption,
  integerOption,
  invalidOption,
  isHeaderName,
  OptionReader,
} from '../../config/option-readers';
import { ErrorClassOrName } from '../../config/error-matcher';
import {
  DEFAULT_IDEMPOTENCY_LEASE_MS,
  DEFAULT_IDEMPOTENCY_TTL_MS,
  InProgressRecord,
  IdempotencyStore,
  wallClock,
} from './idempotency-store';
import { IDEMPOTENCY_OPTIONS_PLACE, PRINCIPAL_EXPECTED, TTL_SHORTER_THAN_LEASE } from './idempotency.messages';
import { MemoryIdempotencyStore } from './memory-idempotency-store';
import type { PlatformRequest, PrincipalResolver } from './platform-request';

/** Header read for the client's key when the `header` option is not given. */
export const DEFAULT_IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Response headers stored and replayed when `replayHeaders` is not given. */
export const DEFAULT_REPLAY_HEADERS: readonly string[] = ['location', 'content-type', 'etag'];

/** How long a store call may take before the request gets 503, when `storeTimeout` is not given: 2 s. */
export const DEFAULT_STORE_TIMEOUT_MS = 2_000;

/** Largest body stored for replay when `maxStoredBytes` is not given: 1 MiB. */
export const DEFAULT_MAX_STORED_BYTES = 1_048_576;

/** Header set on a replay whose first answer's body was not kept: `streamed` or `too-large`. */
export const IDEMPOTENT_BODY_OMITTED_HEADER = 'Idempotent-Body-Omitted';

/** Header set on every replayed answer. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/**
 * What a {@link IdempotencyReconciler} is told about a key whose earlier
 * attempt stopped (its process died, or its outcome was unknown) and whose
 * lease ran out. The caller now owns the key; nothing runs until the
 * reconciler has answered.
 */
export interface StaleIdempotencyKey {
  /** `Class.method` of the protected method. */
  readonly target: string;
  /** `'http'` for a request to a route, `'call'` for a method called with a `key` option. */
  readonly transport: 'http' | 'call';
  /** The client's key (the header's value, or what the `key` option returned). */
  readonly key: string;
  /** The record as found, with the time the operation was first claimed. */
  readonly record: InProgressRecord;
  /**
   * The key the earlier attempt got from `downstreamIdempotencyKey(suffix)`:
   * look the operation up with it at the payment provider or in your tables.
   */
  downstreamKey(suffix?: string): string;
  /** The HTTP request retrying the operation (`transport: 'http'`). */
  readonly request?: PlatformRequest;
  /** The arguments of the call retrying the operation (`transport: 'call'`). */
  readonly args?: readonly unknown[];
}

/** An HTTP answer a reconciler found for a stale key: stored, then replayed. */
export interface ReconciledHttpAnswer {
  /** Always `'complete'`: the earlier attempt had its effect, and this is its answer. */
  readonly action: 'complete';
  /** Status code to replay. */
  readonly status: number;
  /** Body: a string is sent as it is, anything else as JSON. */
  readonly body?: unknown;
  /** Headers to replay (a JSON body gets `content-type: application/json` unless given). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The result a reconciler found for a stale key of a method call: stored, then returned. */
export interface ReconciledResult {
  /** Always `'complete'`: the earlier attempt had its effect, and this is its result. */
  readonly action: 'complete';
  /** What the method returns for this key from now on (JSON-serializable). */
  readonly value?: unknown;
}

/**
 * A reconciler's verdict on a stale key:
 * - `run`: the earlier attempt had no effect; run the method now.
 * - `complete`: it had its effect; this is the answer to store and give.
 * - `wait`: it cannot tell yet; the key stays unresolved (409 / in-progress
 *   error) and is handed to the reconciler again once this lease runs out.
 */
export type IdempotencyReconciliation =
  { readonly action: 'run' } | { readonly action: 'wait' } | ReconciledHttpAnswer | ReconciledResult;

/**
 * Decides what became of an operation whose attempt stopped without
 * finishing, before anyone may run it again (resume or resolve).
 *
 * @example
 * ```ts
 * reconciler: async (stale) => {
 *   const charge = await payments.findByReference(stale.downstreamKey());
 *   return charge ? { action: 'complete', status: 201, body: charge } : { action: 'run' };
 * }
 * ```
 */
export type IdempotencyReconciler = (
  stale: StaleIdempotencyKey,
) => IdempotencyReconciliation | Promise<IdempotencyReconciliation>;

/**
 * Who is asking, for the key scope: a function of the request (it runs
 * after guards, so `req.user` is set) returning the client's identity, or
 * `'shared'` to let every client share one key space on purpose.
 */
export type IdempotencyPrincipal = PrincipalResolver | 'shared';

/** Module option `idempotency` of `ResilienceModule.forRoot`. */
export interface IdempotencyModuleOptions {
  /** Where keys live; default a `MemoryIdempotencyStore` of this process (on the module clock when one is injected). */
  store?: IdempotencyStore;
  /** How long a finished key is remembered (and replayed). Default `24h`. */
  ttl?: Duration;
  /** How long a claim holds its key before another attempt may reconcile it; renewed while the method runs. Default `30s`. */
  lease?: Duration;
  /** Request header carrying the client's key. Default `Idempotency-Key`. */
  header?: string;
  /**
   * How long a store call may take before the request is answered 503
   * (`IdempotencyStoreUnavailableError`); never longer than the time left
   * before the request deadline. Default `2s`.
   */
  storeTimeout?: Duration;
  /**
   * Largest answer body kept for replay, in bytes. A larger one (and any
   * streamed one) still reaches the client and settles the key, but its
   * replay has no body and says so (`Idempotent-Body-Omitted`). Default 1 MiB.
   */
  maxStoredBytes?: number;
  /**
   * Who is asking, for every route without a `principal` of its own: keys
   * are scoped by it, the method and the matched route, so two clients
   * picking the same key stay apart. A route with neither fails bootstrap.
   */
  principal?: IdempotencyPrincipal;
  /** Response headers stored and replayed (never `Set-Cookie`). Default `Location`, `Content-Type`, `ETag`. */
  replayHeaders?: readonly string[];
  /** Resolves stale keys of every `@Idempotent` that has no `reconciler` of its own. */
  reconciler?: IdempotencyReconciler;
}

/** What a finished request does to its key: store its answer, free the key, or keep it claimed. */
export type IdempotencySettlement = 'store' | 'release' | 'keep';

/** What `@Idempotent`'s `key` may be: a reader of the method's arguments. */
// Any parameter list: `@Idempotent` checks it against the method it stands on.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type IdempotentKey = (...args: any[]) => string | undefined;

/** What `@Idempotent`'s `fingerprint` may be: a reader of the method's arguments. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type IdempotentFingerprint = (...args: any[]) => unknown;

/**
 * Options of one `@Idempotent`. `Key` and `Fingerprint` are the types of
 * the `key` and `fingerprint` given, which the decorator checks against
 * the parameters of the method it stands on.
 */
export interface IdempotentOptions<
  Key extends IdempotentKey = IdempotentKey,
  Fingerprint extends IdempotentFingerprint = IdempotentFingerprint,
> {
  /**
   * Refuse a request (call) without a key: 400 over HTTP, an
   * `IdempotencyKeyMissingError` otherwise. With false it runs unprotected.
   * A malformed key is refused either way. Default true.
   */
  required?: boolean;
  /**
   * The key of a call that is not an HTTP request (a message handler),
   * from the method's arguments, e.g. `(message) => message.id`. Required
   * on methods that are not routes; not allowed on routes. It gets the
   * method's arguments; `tsc` refuses one whose parameters do not take them.
   */
  key?: Key;
  /**
   * What identifies a keyed call's payload: a second call with the same key
   * and another fingerprint is refused (`IdempotencyKeyReuseError`).
   * Default: the first argument. Give one when that argument carries
   * per-delivery data (attempt counters, timestamps). Not for routes, which
   * fingerprint method, path, query and body. Checked as `key` is.
   */
  fingerprint?: Fingerprint;
  /** Who is asking, on this route; default the module's `principal` (routes only). */
  principal?: IdempotencyPrincipal;
  /** Record lifetime for this method; default the module's `ttl`. */
  ttl?: Duration;
  /** Lease for this method; default the module's `lease`. */
  lease?: Duration;
  /**
   * What an answered status does to the key: `'store'` the answer to
   * replay it, `'release'` the key (nothing happened, so a retry runs
   * again), or `'keep'` it claimed for reconciliation (the outcome is
   * unknown, e.g. a 202 "pending"). Default: below 500 store, else keep.
   */
  onStatus?: (status: number) => IdempotencySettlement;
  /**
   * Errors that prove the method had no effect, so the key is released and
   * a retry runs it. Default: `CallNotPermittedError`, `BulkheadFullError`,
   * `RateLimitedError`, `TooManyInstancesError` (refusals before any call left).
   */
  releaseOn?: readonly ErrorClassOrName[];
  /**
   * Run the method in a transaction on the store's database
   * (`PostgresIdempotencyStore`): writes made through
   * `idempotencyTransaction()` commit together with the key's completion,
   * or neither does. An error rolls everything back and releases the key.
   */
  transactional?: boolean;
  /** Resolves stale keys of this method; default the module's `reconciler`. */
  reconciler?: IdempotencyReconciler;
}

/** The module's idempotency settings after validation. */
export interface ResolvedIdempotencyOptions {
  readonly store: IdempotencyStore;
  readonly ttlMs: number;
  readonly leaseMs: number;
  readonly storeTimeoutMs: number;
  readonly maxStoredBytes: number;
  /** Header name, lower case. */
  readonly header: string;
  /** Header name as configured, for messages. */
  readonly headerLabel: string;
  readonly principal?: IdempotencyPrincipal;
  /** Lower-case header names. */
  readonly replayHeaders: readonly string[];
  readonly reconciler?: IdempotencyReconciler;
}

const MODULE_KEYS = [
  'store',
  'ttl',
  'lease',
  'storeTimeout',
  'maxStoredBytes',
  'header',
  'principal',
  'replayHeaders',
  'reconciler',
];
const DECORATOR_KEYS = [
  'required',
  'key',
  'fingerprint',
  'principal',
  'ttl',
  'lease',
  'onStatus',
  'releaseOn',
  'transactional',
  'reconciler',
];
const STORE_METHODS = ['claim', 'complete', 'release', 'renew', 'get', 'cleanupExpired'] as const;

/** Durations are whole ms here: stores keep absolute times in ms. */
const positiveDuration = durationOption({
  positive: true,
  expected: 'a positive duration (ms, or a string such as "30s" or "24h")',
});
const wholeMs: OptionReader<number> = (value, place, key) => Math.ceil(positiveDuration(value, place, key));
const byteCount = integerOption(0, undefined, 'a whole number of bytes (0 or more)');

/**
 * Validates the module's `idempotency` section (keys in any of Spring's
 * spellings); a bad value throws naming the key and the value.
 *
 * @param raw - the section as given
 * @param clock - the module clock: the default memory store follows an injected one
 */
export function resolveIdempotencyOptions(raw: unknown, clock: Clock): ResolvedIdempotencyOptions {
  const given = new GivenOptions(raw ?? {}, IDEMPOTENCY_OPTIONS_PLACE, MODULE_KEYS);
  const ttlMs = given.read('ttl', wholeMs) ?? DEFAULT_IDEMPOTENCY_TTL_MS;
  const leaseMs = given.read('lease', wholeMs) ?? DEFAULT_IDEMPOTENCY_LEASE_MS;
  if (ttlMs < leaseMs) throw new Error(TTL_SHORTER_THAN_LEASE(given.place, ttlMs, leaseMs));
  const headerLabel = given.read('header', headerNameOption) ?? DEFAULT_IDEMPOTENCY_HEADER;
  return {
    store: given.read('store', storeOption) ?? defaultStore(clock),
    ttlMs,
    leaseMs,
    storeTimeoutMs: given.read('storeTimeout', wholeMs) ?? DEFAULT_STORE_TIMEOUT_MS,
    maxStoredBytes: given.read('maxStoredBytes', byteCount) ?? DEFAULT_MAX_STORED_BYTES,
    header: headerLabel.toLowerCase(),
    headerLabel,
    principal: given.read('principal', principalOption),
    replayHeaders: given.read('replayHeaders', replayHeaderNames) ?? DEFAULT_REPLAY_HEADERS,
    reconciler: given.read('reconciler', functionOption<IdempotencyReconciler>()),
  };
}

/** `@Idempotent` options after validation, durations still relative to the module's. */
export interface CheckedIdempotentOptions {
  readonly required: boolean;
  readonly key?: (...args: unknown[]) => string | undefined;
  readonly fingerprint?: (...args: unknown[]) => unknown;
  readonly principal?: IdempotencyPrincipal;
  readonly ttlMs?: number;
  readonly leaseMs?: number;
  readonly onStatus?: (status: number) => IdempotencySettlement;
  readonly releaseOn?: readonly ErrorClassOrName[];
  readonly transactional: boolean;
  readonly reconciler?: IdempotencyReconciler;
}

/** Validates the options of one `@Idempotent` at decoration time; `place` names it in messages. */
export function checkIdempotentOptions(options: unknown, place: string): CheckedIdempotentOptions {
  if (options === undefined) return { required: true, transactional: false };
  const given = new GivenOptions(options, place, DECORATOR_KEYS);
  const ttlMs = given.read('ttl', wholeMs);
  const leaseMs = given.read('lease', wholeMs);
  if (ttlMs !== undefined && leaseMs !== undefined && ttlMs < leaseMs)
    throw new Error(TTL_SHORTER_THAN_LEASE(place, ttlMs, leaseMs));
  return {
    required: given.read('required', booleanOption) ?? true,
    key: given.read('key', functionOption<NonNullable<CheckedIdempotentOptions['key']>>()),
    fingerprint: given.read('fingerprint', functionOption<NonNullable<CheckedIdempotentOptions['fingerprint']>>()),
    principal: given.read('principal', principalOption),
    ttlMs,
    leaseMs,
    onStatus: given.read('onStatus', functionOption<NonNullable<CheckedIdempotentOptions['onStatus']>>()),
    releaseOn: given.read('releaseOn', errorListOption(false)),
    transactional: given.read('transactional', booleanOption) ?? false,
    reconciler: given.read('reconciler', functionOption<IdempotencyReconciler>()),
  };
}

function principalOption(value: unknown, place: string, key: string): IdempotencyPrincipal {
  return value === 'shared' || typeof value === 'function'
    ? (value as IdempotencyPrincipal)
    : invalidOption(place, key, PRINCIPAL_EXPECTED, value);
}
function replayHeaderNames(value: unknown, place: string, key: string): readonly string[] {
  if (!Array.isArray(value) || !value.every(isHeaderName))
    return invalidOption(place, key, 'a list of HTTP header names', value);
  const names = value.map((h: string) => h.toLowerCase());
  // A cookie belongs to the client that got the first answer; replaying it would hand one client's session to another.
  if (names.includes('set-cookie'))
    invalidOption(place, key, 'a list of header names without Set-Cookie, which is never replayed', value);
  return [...new Set(names)];
}

function storeOption(value: unknown, place: string, key: string): IdempotencyStore {
  const store = value as Record<string, unknown> | null;
  if (store === null || typeof store !== 'object' || STORE_METHODS.some((m) => typeof store[m] !== 'function'))
    invalidOption(place, key, `an IdempotencyStore (an object with ${STORE_METHODS.join(', ')})`, describeStore(value));
  return store as unknown as IdempotencyStore;
}

/** The default store lives in this process only, so any clock works; an injected one lets tests drive leases and TTLs. */
function defaultStore(clock: Clock): IdempotencyStore {
  return new MemoryIdempotencyStore({ clock: clock === systemClock ? wallClock : clock });
}

function describeStore(value: unknown): unknown {
  return value !== null && typeof value === 'object' && value.constructor !== Object
    ? `an instance of ${value.constructor.name}`
    : value;
}

/** Renders a store for messages: its class name. */
export function storeName(store: IdempotencyStore): string {
  return (store as object).constructor?.name ?? describe(store);
}
