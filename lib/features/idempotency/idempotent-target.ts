import { ErrorMatcher } from '../../config/error-matcher';
import { TransactionHostLike } from '../transaction/cls-transaction';
import {
  BulkheadFullError,
  CallNotPermittedError,
  RateLimitedError,
  ResilienceError,
  TooManyInstancesError,
} from '../../kernel/errors';
import { IdempotencyStore, InProgressRecord, StoredResponse } from './idempotency-store';
import { CheckedIdempotentOptions } from './idempotency.options';
import { StoreCallBounds } from './store-call';
import type { PlatformRequest } from './platform-request';

/** What became of one request or call, as reported by `IdempotencyRegistry.onOutcome`. */
export type IdempotencyOutcome =
  /** The method ran and its answer was stored. */
  | 'executed'
  /** A stored answer was given again; the method did not run. */
  | 'replayed'
  /** The key was held by a running attempt: 409 / `IdempotencyKeyInProgressError`. */
  | 'in_progress'
  /** The key was used before with another request: 422 / `IdempotencyKeyReuseError`. */
  | 'key_reuse'
  /** A required key was absent or malformed: 400 / `IdempotencyKeyMissingError`. */
  | 'missing_key'
  /** The route's principal resolved to no caller (and is not `'shared'`): 401, nothing ran. */
  | 'missing_principal'
  /** The request's body was not parsed when the key was checked, so it could not be fingerprinted: 415, nothing ran. */
  | 'body_not_parsed'
  /** The method failed without effect (or rolled back); the key was freed for a retry. */
  | 'released'
  /** The outcome is unknown (5xx, timeout, a failed store write, an unresolved stale key); the key stays claimed for reconciliation. */
  | 'kept_unknown'
  /** The store failed, did not answer in time or was full before anything ran: 503 / `IdempotencyStoreUnavailableError`. */
  | 'store_unavailable'
  /** The principal held as many keys as the store allows it: 429 / `IdempotencyKeyQuotaExceededError`, nothing ran. */
  | 'quota_exceeded'
  /** A reconciler resolved a stale key with the answer of its earlier attempt. */
  | 'reconciled'
  /** No key was given where none is required; the method ran unprotected. */
  | 'bypassed';

/** Where a protected run came from. */
export type IdempotencyTransport = 'http' | 'call';

/** What the request or call that reached the method carries, for a reconciler. */
export interface IdempotencyOrigin {
  readonly transport: IdempotencyTransport;
  readonly request?: PlatformRequest;
  readonly args?: readonly unknown[];
}

/** The first step of a protected run, decided by the store (and a reconciler). */
export type IdempotencyStart =
  /** The caller owns the key and runs the method. */
  | { readonly kind: 'run'; readonly token: string; readonly record: InProgressRecord }
  /** Give this stored answer; the method does not run. */
  | { readonly kind: 'replay'; readonly response: StoredResponse; readonly outcome: 'replayed' | 'reconciled' }
  /** Refuse with `error`. */
  | {
      readonly kind: 'refuse';
      readonly error: ResilienceError;
      readonly outcome: 'in_progress' | 'key_reuse' | 'kept_unknown' | 'quota_exceeded';
    };

/** Settings of one protected method, the decorator's options over the module's. */
export interface IdempotentMethodSettings
  extends Omit<CheckedIdempotentOptions, 'ttlMs' | 'leaseMs' | 'releaseOn'>, StoreCallBounds {
  readonly store: IdempotencyStore;
  readonly ttlMs: number;
  readonly leaseMs: number;
  readonly releaseOn: ErrorMatcher;
  /** Whether the method is an HTTP route (its key is a header) or not (its key comes from `key`). */
  readonly route: boolean;
  /** Where the route's `principal` was chosen, as a refusal names it: on the decorator, or the module option. */
  readonly principalSource?: string;
  /** The application's `@nestjs-cls/transactional` host, whose transaction a transactional run opens or joins. */
  readonly transactionHost?: () => TransactionHostLike | undefined;
}

/** Errors raised before any call left: nothing happened, so retrying is safe. */
export const DEFAULT_RELEASE_ON = [CallNotPermittedError, BulkheadFullError, RateLimitedError, TooManyInstancesError];

/** One protected method as its runs and its reconciliation see it. */
export interface IdempotentTarget {
  /** `Class.method`, used in errors, events and messages. */
  readonly name: string;
  /** The resolved options. */
  readonly settings: IdempotentMethodSettings;
  /** Reports one outcome of a request or call through the method. */
  report(outcome: IdempotencyOutcome, transport: IdempotencyTransport, key?: string, error?: unknown): void;
  /** Logs a message once. */
  warn(message: string): void;
}
