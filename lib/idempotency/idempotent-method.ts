import { from, lastValueFrom, Observable, Subscriber } from 'rxjs';
import { TimerHandle } from '../clock';
import { httpStatusOf } from '../error-status';
import { ErrorMatcher } from '../error-matcher';
import {
  BulkheadFullError,
  CallNotPermittedError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReuseError,
  IdempotencyStoreUnavailableError,
  RateLimitedError,
  ResilienceError,
} from '../errors';
import { Policy } from '../policy';
import { InProgressRecord, IdempotencyStore, StoredHttpResponse, StoredResponse } from './idempotency-store';
import { deriveDownstreamKey, fingerprintOf, scopedKey } from './idempotency-key';
import { IdempotencyScope, idempotencyStorage } from './idempotency.context';
import { CYCLIC_FINGERPRINT, KEY_FUNCTION_EMPTY, NO_RECONCILER, ON_STATUS_FAILED } from './idempotency.messages';
import {
  CheckedIdempotentOptions,
  IdempotencyReconciler,
  IdempotencyReconciliation,
  IdempotencySettlement,
  StaleIdempotencyKey,
} from './idempotency.options';
import { PostgresPoolClient, TransactionalIdempotencyStore } from './postgres-idempotency-store';
import { boundedStoreCall, StoreCallBounds } from './store-call';

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
  /** The method failed without effect (or rolled back); the key was freed for a retry. */
  | 'released'
  /** The outcome is unknown (5xx, timeout, a failed store write, an unresolved stale key); the key stays claimed for reconciliation. */
  | 'kept_unknown'
  /** The store failed or did not answer in time before anything ran: 503 / `IdempotencyStoreUnavailableError`. */
  | 'store_unavailable'
  /** A reconciler resolved a stale key with the answer of its earlier attempt. */
  | 'reconciled'
  /** No key was given where none is required; the method ran unprotected. */
  | 'bypassed';

/** Where a protected run came from. */
export type IdempotencyTransport = 'http' | 'call';

/** What the request or call that reached the method carries, for a reconciler. */
export interface IdempotencyOrigin {
  readonly transport: IdempotencyTransport;
  readonly request?: unknown;
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
      readonly outcome: 'in_progress' | 'key_reuse' | 'kept_unknown';
    };

/** What settling did. */
export type SettleResult =
  /** The answer is stored (and, in a transaction, committed with the business writes). */
  | { readonly status: 'completed' }
  /** The key is free again. */
  | { readonly status: 'released' }
  /** The key stays claimed: outcome unknown, or the store could not be written (`error`). */
  | { readonly status: 'kept'; readonly error?: unknown }
  /** Another attempt took the key over; this run's answer was not stored, but its effect stands. */
  | { readonly status: 'superseded' }
  /** A transaction was rolled back after all (`error` says why): the run's answer must not be given. */
  | { readonly status: 'rolled_back'; readonly error: unknown };

/** Settings of one protected method, the decorator's options over the module's. */
export interface IdempotentMethodSettings
  extends Omit<CheckedIdempotentOptions, 'ttlMs' | 'leaseMs' | 'releaseOn'>, StoreCallBounds {
  readonly store: IdempotencyStore;
  readonly ttlMs: number;
  readonly leaseMs: number;
  readonly releaseOn: ErrorMatcher;
  /** Whether the method is an HTTP route (its key is a header) or not (its key comes from `key`). */
  readonly route: boolean;
}

/** Errors raised before any call left: nothing happened, so retrying is safe. */
export const DEFAULT_RELEASE_ON = [CallNotPermittedError, BulkheadFullError, RateLimitedError];

/** A transactional method may always run again: a stale key means its transaction never committed. */
const RUN_AGAIN: IdempotencyReconciler = () => ({ action: 'run' });

/**
 * The idempotency layer of one `@Idempotent` method. Over HTTP the
 * interceptor drives it (claim, run, settle) and this layer only marks when
 * the method itself starts; for a method called with a `key` option it does
 * the whole run: the same states and stores, the stored result returned to
 * a duplicate call.
 */
export class IdempotentMethod implements Policy {
  /**
   * @param name - `Class.method`, used in errors, events and messages
   * @param settings - the resolved options
   * @param emit - reports each outcome
   * @param warn - logs a message once
   */
  constructor(
    readonly name: string,
    readonly settings: IdempotentMethodSettings,
    private readonly emit: (
      outcome: IdempotencyOutcome,
      method: IdempotentMethod,
      transport: IdempotencyTransport,
      key?: string,
      error?: unknown,
    ) => void,
    private readonly warn: (message: string) => void,
  ) {}

  /** Runs the method under its key (see the class comment). */
  async call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const scope = idempotencyStorage.getStore();
    if (scope !== undefined && scope.owner === this && !scope.started) {
      scope.started = true;
      return next(arg);
    }
    // A route reached without an idempotent request (GET, an optional key left out, a direct call) runs as it is.
    if (this.settings.route) return next(arg);
    return this.callWithKey(next, arg);
  }

  /**
   * Each subscription of an Observable method, as {@link IdempotentMethod.call}
   * runs a call: over HTTP it marks the start of the method's run; with a
   * `key` it runs the subscription under the key and answers its last value
   * (the one stored and replayed).
   */
  observe<T>(source: Observable<T>, args: unknown[]): Observable<T> {
    return new Observable<T>((subscriber) => {
      const scope = idempotencyStorage.getStore();
      if (scope !== undefined && scope.owner === this && !scope.started) {
        scope.started = true;
        return source.subscribe(subscriber);
      }
      if (this.settings.route) return source.subscribe(subscriber);
      return from(this.callWithKey(() => lastValueFrom(source, { defaultValue: undefined }), args)).subscribe(
        subscriber as Subscriber<unknown>,
      );
    });
  }

  private async callWithKey<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const args = arg as unknown as unknown[];
    const { key: keyOf, fingerprint } = this.settings;
    const key = keyOf === undefined ? undefined : keyOf(...args);
    if (typeof key !== 'string' || key === '') {
      if ((key === undefined || key === '') && !this.settings.required) {
        this.emit('bypassed', this, 'call');
        return next(arg);
      }
      this.emit('missing_key', this, 'call');
      throw new IdempotencyKeyMissingError(this.name, KEY_FUNCTION_EMPTY(this.name, key));
    }
    const storeKey = scopedKey(undefined, 'CALL', this.name, key);
    const print = fingerprintOf(fingerprint === undefined ? args[0] : fingerprint(...args), () =>
      CYCLIC_FINGERPRINT(this.name),
    );
    const start = await this.reportingStoreFaults(key, () =>
      this.begin(storeKey, print, key, { transport: 'call', args }),
    );
    if (start.kind === 'replay') {
      this.emit(start.outcome, this, 'call', key);
      return (start.response.kind === 'result' ? start.response.value : undefined) as R;
    }
    if (start.kind === 'refuse') {
      this.emit(start.outcome, this, 'call', key, start.error);
      throw start.error;
    }
    const run = await this.reportingStoreFaults(key, () => this.open(storeKey, start.token, start.record, true));
    let value: R;
    try {
      value = await idempotencyStorage.run(run.scope, () => next(arg));
    } catch (error) {
      run.fail(error);
      const settled = await run.finish(this.decideForError(error));
      this.emit(
        settled.status === 'released' || settled.status === 'rolled_back' ? 'released' : 'kept_unknown',
        this,
        'call',
        key,
        error,
      );
      throw error;
    }
    const settled = await run.finish('store', { kind: 'result', value });
    switch (settled.status) {
      case 'completed':
        this.emit('executed', this, 'call', key);
        return value;
      case 'rolled_back':
        this.emit(
          settled.error instanceof IdempotencyKeyInProgressError ? 'in_progress' : 'released',
          this,
          'call',
          key,
          settled.error,
        );
        throw settled.error;
      default:
        this.emit('kept_unknown', this, 'call', key, settled.status === 'kept' ? settled.error : undefined);
        return value;
    }
  }

  /** Runs a step before the method; a store that failed it is reported as `store_unavailable`. */
  private async reportingStoreFaults<T>(key: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof IdempotencyStoreUnavailableError) this.emit('store_unavailable', this, 'call', key, error);
      throw error;
    }
  }

  /**
   * Claims `storeKey` and decides what to do: run, replay, or refuse. A
   * stale key goes to the reconciler first.
   *
   * @param key - the client's key, for the reconciler
   */
  async begin(
    storeKey: string,
    fingerprint: string,
    key: string,
    origin: IdempotencyOrigin,
  ): Promise<IdempotencyStart> {
    const { store, leaseMs, ttlMs } = this.settings;
    const claim = await boundedStoreCall(this.settings, this.name, 'claim', () =>
      store.claim(storeKey, fingerprint, { leaseMs, ttlMs }),
    );
    switch (claim.outcome) {
      case 'claimed':
        return { kind: 'run', token: claim.token, record: claim.record };
      case 'completed':
        return { kind: 'replay', response: claim.record.response, outcome: 'replayed' };
      case 'in_progress':
        return {
          kind: 'refuse',
          error: new IdempotencyKeyInProgressError(this.name, claim.retryAfterMs),
          outcome: 'in_progress',
        };
      case 'fingerprint_mismatch':
        return { kind: 'refuse', error: new IdempotencyKeyReuseError(this.name), outcome: 'key_reuse' };
      case 'stale':
        return this.reconcile(storeKey, key, claim.token, claim.record, origin);
    }
  }

  private async reconcile(
    storeKey: string,
    key: string,
    token: string,
    record: InProgressRecord,
    origin: IdempotencyOrigin,
  ): Promise<IdempotencyStart> {
    const { store, leaseMs, ttlMs, transactional } = this.settings;
    const reconciler = this.settings.reconciler ?? (transactional ? RUN_AGAIN : undefined);
    const unresolved: IdempotencyStart = {
      kind: 'refuse',
      error: new IdempotencyKeyInProgressError(this.name, leaseMs),
      outcome: 'kept_unknown',
    };
    if (reconciler === undefined) {
      this.warn(NO_RECONCILER(this.name));
      return unresolved;
    }
    const stale: StaleIdempotencyKey = {
      target: this.name,
      transport: origin.transport,
      key,
      record,
      downstreamKey: (suffix = '') => deriveDownstreamKey(storeKey, record.createdAt, suffix),
      request: origin.request,
      args: origin.args,
    };
    let verdict: IdempotencyReconciliation;
    try {
      verdict = await reconciler(stale);
    } catch (error) {
      // The key keeps this attempt's lease: nobody runs it until the reconciler is asked again.
      this.emit('kept_unknown', this, origin.transport, key, error);
      throw error;
    }
    switch (verdict?.action) {
      case 'run':
        return { kind: 'run', token, record };
      case 'wait':
        return unresolved;
      case 'complete': {
        const response = reconciledResponse(verdict, origin.transport, this.name);
        const completed = await boundedStoreCall(this.settings, this.name, 'complete', () =>
          store.complete(storeKey, token, response, ttlMs),
        );
        return completed
          ? { kind: 'replay', response, outcome: 'reconciled' }
          : { kind: 'refuse', error: new IdempotencyKeyInProgressError(this.name, leaseMs), outcome: 'in_progress' };
      }
      default:
        throw new TypeError(
          `resilience4nest: the reconciler of @Idempotent on ${this.name} returned ${JSON.stringify(verdict)}; expected { action: 'run' | 'wait' | 'complete', ... }`,
        );
    }
  }

  /**
   * Starts the owner's run: opens the transaction of a transactional method
   * and keeps the lease renewed until the run settles.
   *
   * @param started - true when the run calls the method itself (a keyed call), false when a pipeline will mark it
   */
  async open(storeKey: string, token: string, record: InProgressRecord, started: boolean): Promise<IdempotentRun> {
    let transaction: PostgresPoolClient | undefined;
    if (this.settings.transactional) {
      const store = this.settings.store as TransactionalIdempotencyStore;
      const connecting = Promise.resolve().then(() => store.connect());
      try {
        const client = await boundedStoreCall(this.settings, this.name, 'connect', () => connecting);
        await boundedStoreCall(this.settings, this.name, 'BEGIN', () => client.query('BEGIN'));
        transaction = client;
      } catch (error) {
        // A connection that arrives after the bound passed is discarded too.
        connecting.then(
          (client) => client.release(asError(error)),
          () => undefined,
        );
        // Nothing ran: the key may be claimed again at once.
        await boundedStoreCall(this.settings, this.name, 'release', () => store.release(storeKey, token)).catch(
          () => undefined,
        );
        throw error;
      }
    }
    const scope = new IdempotencyScope(this, this.name, storeKey, record.createdAt, transaction);
    scope.started = started;
    return new IdempotentRun(this.settings, this.name, storeKey, token, scope);
  }

  /**
   * How an HTTP run settles, from the status answered (`undefined` when the
   * client went away before any answer was written).
   */
  decideForAnswer(run: IdempotentRun, status: number | undefined): IdempotencySettlement {
    if (run.failed && (!run.scope.started || this.settings.releaseOn.matches(run.error))) return 'release';
    if (status === undefined) return 'keep';
    const { onStatus } = this.settings;
    if (onStatus === undefined) return status < 500 ? 'store' : 'keep';
    let settlement: unknown;
    try {
      settlement = onStatus(status);
    } catch (error) {
      this.warn(ON_STATUS_FAILED(this.name, status, error));
    }
    // Anything but a known verdict keeps the key: never run twice on a guess.
    return settlement === 'store' || settlement === 'release' ? settlement : 'keep';
  }

  /** How a keyed call that threw settles: a refusal or a 4xx frees the key, anything else may have had its effect. */
  private decideForError(error: unknown): IdempotencySettlement {
    if (this.settings.releaseOn.matches(error)) return 'release';
    const status = httpStatusOf(error);
    return status !== undefined && status < 500 ? 'release' : 'keep';
  }
}

/**
 * One owned run of a protected method: renews the lease while it runs and
 * settles the key (and the transaction) exactly once at the end.
 */
export class IdempotentRun {
  /** True once the method failed; `error` holds why. */
  failed = false;
  /** The method's error, when `failed`. */
  error: unknown;
  private timer: TimerHandle | undefined;
  private settled = false;

  /**
   * @param settings - the method's settings
   * @param name - `Class.method`
   * @param storeKey - the scoped key
   * @param token - the owner token
   * @param scope - what the helpers read while the method runs
   */
  constructor(
    private readonly settings: IdempotentMethodSettings,
    private readonly name: string,
    private readonly storeKey: string,
    private readonly token: string,
    readonly scope: IdempotencyScope,
  ) {
    this.schedule();
  }

  /** Records that the method failed with `error`. */
  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
  }

  /**
   * Settles the key: stores `response` (committing the transaction with it),
   * releases the key, or keeps it claimed. In a transaction every outcome
   * but a stored one rolls back, so the key is released: nothing the method
   * wrote survived. A failed store write keeps the key claimed rather than
   * freeing it, so the method is never run twice for one operation.
   */
  async finish(decision: IdempotencySettlement, response?: StoredResponse): Promise<SettleResult> {
    this.settled = true;
    if (this.timer !== undefined) this.settings.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const transaction = this.scope.transaction;
    if (transaction !== undefined) return this.finishTransaction(transaction, decision, response);
    const { store, ttlMs } = this.settings;
    try {
      if (decision === 'store' && response !== undefined) {
        const completed = await boundedStoreCall(
          this.settings,
          this.name,
          'complete',
          () => store.complete(this.storeKey, this.token, response, ttlMs),
          false,
        );
        return completed ? { status: 'completed' } : { status: 'superseded' };
      }
      if (decision === 'release') {
        await boundedStoreCall(
          this.settings,
          this.name,
          'release',
          () => store.release(this.storeKey, this.token),
          false,
        );
        return { status: 'released' };
      }
      return { status: 'kept' };
    } catch (error) {
      return { status: 'kept', error };
    }
  }

  private async finishTransaction(
    transaction: PostgresPoolClient,
    decision: IdempotencySettlement,
    response: StoredResponse | undefined,
  ): Promise<SettleResult> {
    const store = this.settings.store as TransactionalIdempotencyStore;
    const { ttlMs, leaseMs } = this.settings;
    if (decision === 'store' && response !== undefined && !this.failed) {
      try {
        if (await store.completeInTransaction(transaction, this.storeKey, this.token, response, ttlMs)) {
          await transaction.query('COMMIT');
          transaction.release();
          return { status: 'completed' };
        }
        await transaction.query('ROLLBACK');
        transaction.release();
        return { status: 'rolled_back', error: new IdempotencyKeyInProgressError(this.name, leaseMs) };
      } catch (error) {
        // The connection's state is unknown: discard it. The release below is owner- and state-checked,
        // so if the commit went through after all, the completed record stays.
        transaction.release(asError(error));
        await store.release(this.storeKey, this.token).catch(() => undefined);
        return { status: 'rolled_back', error };
      }
    }
    try {
      await transaction.query('ROLLBACK');
      transaction.release();
    } catch (error) {
      transaction.release(asError(error));
    }
    try {
      // A stored error answer (a 4xx the method threw) is still the answer, with its writes rolled back.
      if (decision === 'store' && response !== undefined) {
        return (await store.complete(this.storeKey, this.token, response, ttlMs))
          ? { status: 'completed' }
          : { status: 'superseded' };
      }
      await store.release(this.storeKey, this.token);
      return { status: 'released' };
    } catch (error) {
      return { status: 'kept', error };
    }
  }

  /** Renews the lease every third of it, so two missed renewals still leave it held. */
  private schedule(): void {
    const { clock, leaseMs } = this.settings;
    this.timer = clock.setTimeout(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3)));
  }

  private renew(): void {
    this.timer = undefined;
    if (this.settled) return;
    const { store, leaseMs } = this.settings;
    // Bounded, so a renewal the store never answers does not end the renewals.
    boundedStoreCall(
      this.settings,
      this.name,
      'renew',
      () => store.renew(this.storeKey, this.token, leaseMs),
      false,
    ).then(
      // Once another attempt owns the key there is nothing left to keep; completion will be refused too.
      (owned) => {
        if (owned && !this.settled) this.schedule();
      },
      () => {
        if (!this.settled) this.schedule();
      },
    );
  }
}

/** The stored form of a reconciler's answer. */
function reconciledResponse(
  verdict: IdempotencyReconciliation,
  transport: IdempotencyTransport,
  name: string,
): StoredResponse {
  if (transport === 'call') return { kind: 'result', value: (verdict as { value?: unknown }).value };
  const answer = verdict as { status?: unknown; body?: unknown; headers?: Readonly<Record<string, string>> };
  if (
    typeof answer.status !== 'number' ||
    !Number.isInteger(answer.status) ||
    answer.status < 100 ||
    answer.status > 599
  ) {
    throw new TypeError(
      `resilience4nest: the reconciler of @Idempotent on ${name} completed an HTTP request without a valid 'status', got ${String(answer.status)}`,
    );
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers ?? {}))
    if (name.toLowerCase() !== 'set-cookie') headers[name.toLowerCase()] = String(value);
  const json = answer.body !== undefined && typeof answer.body !== 'string';
  if (json && headers['content-type'] === undefined) headers['content-type'] = 'application/json; charset=utf-8';
  const body = answer.body === undefined ? '' : json ? JSON.stringify(answer.body) : (answer.body as string);
  return { kind: 'http', status: answer.status, headers, body } satisfies StoredHttpResponse;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
