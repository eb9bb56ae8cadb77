import { hasNoOutcome } from '../../kernel/cancellation';
import { TimerHandle } from '../../kernel/clock';
import { ErrorMatcher } from '../../config/error-matcher';
import { httpStatusOf } from '../../kernel/error-status';
import { isRefusal, neverSent } from '../../kernel/refusal';
import {
  IdempotencyKeyInProgressError,
  IdempotencyKeyQuotaExceededError,
  IdempotencyKeyReuseError,
  IdempotencyStoreUnavailableError,
} from '../../kernel/errors';
import { InProgressRecord, StoredResponse } from './idempotency-store';
import { idempotencyStorage, IdempotencyScope } from './idempotency.context';
import { ON_STATUS_FAILED, STORE_FULL } from './idempotency.messages';
import { IdempotencySettlement } from './idempotency.options';
import { reconcileStaleKey } from './idempotency.reconciliation';
import { IdempotencyOrigin, IdempotencyStart, IdempotentTarget } from './idempotent-target';
import { boundedStoreCall } from './store-call';
import { asError, openRunTransaction, RunTransaction } from './run-transaction';
import { TransactionalIdempotencyStore } from './transactional-store';

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

/**
 * Claims `storeKey` for `target` and decides what to do: run, replay, or
 * refuse. A stale key goes to {@link reconcileStaleKey} first.
 *
 * @param key - the client's key, for the reconciler
 * @param principal - who is asking, for a store that bounds the keys of each principal
 * @throws IdempotencyStoreUnavailableError when the store fails, does not answer in time, or is full
 */
export async function claimKey(
  target: IdempotentTarget,
  storeKey: string,
  fingerprint: string,
  key: string,
  origin: IdempotencyOrigin,
  principal?: string,
): Promise<IdempotencyStart> {
  const { name, settings } = target;
  const { store, leaseMs, ttlMs } = settings;
  const options = principal === undefined ? { leaseMs, ttlMs } : { leaseMs, ttlMs, principal };
  const claim = await boundedStoreCall(
    settings,
    name,
    'claim',
    () => store.claim(storeKey, fingerprint, options),
    true,
    // The client was told nothing ran and to retry with the same key: a claim landing now must not hold it.
    (late) => {
      if (late.outcome === 'claimed') store.release(storeKey, late.token).catch(() => undefined);
    },
  );
  switch (claim.outcome) {
    case 'claimed':
      return { kind: 'run', token: claim.token, record: claim.record };
    case 'completed':
      return { kind: 'replay', response: claim.record.response, outcome: 'replayed' };
    case 'in_progress':
      return {
        kind: 'refuse',
        error: new IdempotencyKeyInProgressError(name, claim.retryAfterMs),
        outcome: 'in_progress',
      };
    case 'fingerprint_mismatch':
      return { kind: 'refuse', error: new IdempotencyKeyReuseError(name), outcome: 'key_reuse' };
    case 'stale':
      return reconcileStaleKey(target, storeKey, key, claim.token, claim.record, origin);
    case 'quota_exceeded':
      if (claim.scope === 'principal')
        return {
          kind: 'refuse',
          error: new IdempotencyKeyQuotaExceededError(name, claim.retryAfterMs),
          outcome: 'quota_exceeded',
        };
      throw new IdempotencyStoreUnavailableError(name, STORE_FULL, claim.retryAfterMs);
  }
}

/**
 * One owned run of a protected method, from a claimed key to its settling:
 * renews the lease while the method runs, decides from how it ended whether
 * its answer is recorded, the key released or kept claimed, and settles the
 * key (and the transaction) exactly once.
 */
export class IdempotentRun {
  /** True once the method failed; `error` holds why. */
  failed = false;
  /** The method's error, when `failed`. */
  error: unknown;
  private timer: TimerHandle = undefined;
  private settled = false;

  /**
   * Starts the owner's run of a claimed key: opens the transaction of a
   * transactional method and keeps the lease renewed until the run settles.
   * A transaction that cannot be opened frees the key, since nothing ran.
   *
   * @param started - true when the run calls the method itself (a keyed call), false when a pipeline will mark it
   *   (see {@link IdempotencyScope.started})
   */
  static async open(
    target: IdempotentTarget,
    storeKey: string,
    token: string,
    record: InProgressRecord,
    started: boolean,
  ): Promise<IdempotentRun> {
    const { name, settings } = target;
    let transaction: RunTransaction | undefined;
    if (settings.transactional) {
      const store = settings.store as TransactionalIdempotencyStore;
      try {
        transaction = await openRunTransaction(settings, name, store, settings.transactionHost?.());
      } catch (error) {
        // Nothing ran: the key may be claimed again at once.
        // Stryker disable next-line StringLiteral: the operation only names a store error that is swallowed here
        await boundedStoreCall(settings, name, 'release', () => store.release(storeKey, token)).catch(() => undefined);
        throw error;
      }
    }
    const scope = new IdempotencyScope(target, name, storeKey, record.createdAt, transaction?.handle);
    scope.started = started;
    return new IdempotentRun(target, storeKey, token, scope, transaction);
  }

  /**
   * @param target - the protected method
   * @param storeKey - the scoped key
   * @param token - the owner token
   * @param scope - what the helpers read while the method runs
   * @param transaction - the open transaction of a transactional method
   */
  constructor(
    private readonly target: IdempotentTarget,
    private readonly storeKey: string,
    private readonly token: string,
    readonly scope: IdempotencyScope,
    private readonly transaction?: RunTransaction,
  ) {
    this.schedule();
  }

  /** Runs `fn` (the method) in the run's scope, and in its transaction when it has one. */
  enter<R>(fn: () => R): R {
    const { transaction } = this;
    return transaction === undefined
      ? idempotencyStorage.run(this.scope, fn)
      : transaction.enter(() => idempotencyStorage.run(this.scope, fn));
  }

  /** Records that the method failed with `error`. */
  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
  }

  /**
   * How an HTTP run settles, from the status answered (`undefined` when the
   * client went away before any answer was written). A failure before the
   * method was entered frees the key: nothing ran.
   */
  settlementForAnswer(status: number | undefined): IdempotencySettlement {
    const { name, settings } = this.target;
    if (this.failed && (!this.scope.started || releases(settings.releaseOn, this.error))) return 'release';
    if (status === undefined) return 'keep';
    const { onStatus } = settings;
    if (onStatus === undefined) return status < 500 ? 'store' : 'keep';
    let settlement: unknown;
    try {
      settlement = onStatus(status);
    } catch (error) {
      this.target.warn(ON_STATUS_FAILED(name, status, error));
    }
    // Anything but a known verdict keeps the key: never run twice on a guess.
    return settlement === 'store' || settlement === 'release' ? settlement : 'keep';
  }

  /** How a keyed call that threw settles: a refusal or a 4xx frees the key, anything else may have had its effect. */
  settlementForError(error: unknown): IdempotencySettlement {
    // An attempt that ended with no outcome (nothing started, or nothing reached the method) had no effect.
    if (hasNoOutcome(error)) return 'release';
    if (releases(this.target.settings.releaseOn, error)) return 'release';
    const status = httpStatusOf(error);
    return status !== undefined && status < 500 ? 'release' : 'keep';
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
    const { name, settings } = this.target;
    // Stryker disable next-line ConditionalExpression: clearing no timer does nothing
    if (this.timer !== undefined) settings.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const { transaction } = this;
    if (transaction !== undefined) return this.finishTransaction(transaction, decision, response);
    const { store, ttlMs } = settings;
    try {
      // Stryker disable next-line ConditionalExpression: callers pass a response only with 'store'
      if (decision === 'store' && response !== undefined) {
        const completed = await boundedStoreCall(
          settings,
          name,
          'complete',
          () => store.complete(this.storeKey, this.token, response, ttlMs),
          false,
        );
        return completed ? { status: 'completed' } : { status: 'superseded' };
      }
      if (decision === 'release') {
        await boundedStoreCall(settings, name, 'release', () => store.release(this.storeKey, this.token), false);
        return { status: 'released' };
      }
      return { status: 'kept' };
    } catch (error) {
      return { status: 'kept', error };
    }
  }

  private async finishTransaction(
    transaction: RunTransaction,
    decision: IdempotencySettlement,
    response: StoredResponse | undefined,
  ): Promise<SettleResult> {
    const { name, settings } = this.target;
    const store = settings.store as TransactionalIdempotencyStore;
    const { ttlMs, leaseMs } = settings;
    // Stryker disable next-line ConditionalExpression: callers pass a response only with 'store'
    if (decision === 'store' && response !== undefined && !this.failed) {
      try {
        if (await store.completeInTransaction(transaction.queryable, this.storeKey, this.token, response, ttlMs)) {
          await transaction.commit();
          return { status: 'completed' };
        }
        await transaction.rollback();
        return { status: 'rolled_back', error: new IdempotencyKeyInProgressError(name, leaseMs) };
      } catch (error) {
        // The transaction's state is unknown: let it go. The release below is owner- and state-checked,
        // so if the commit went through after all, the completed record stays.
        transaction.abandon(asError(error));
        await store.release(this.storeKey, this.token).catch(() => undefined);
        return { status: 'rolled_back', error };
      }
    }
    try {
      await transaction.rollback();
    } catch (error) {
      transaction.abandon(asError(error));
    }
    try {
      // A stored error answer (a 4xx the method threw) is still the answer, with its writes rolled back.
      // Stryker disable next-line ConditionalExpression: callers pass a response only with 'store'
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
    const { clock, leaseMs } = this.target.settings;
    this.timer = clock.setTimeout(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3)));
  }

  private renew(): void {
    this.timer = undefined;
    const { name, settings } = this.target;
    const { store, leaseMs } = settings;
    // Bounded, so a renewal the store never answers does not end the renewals.
    // Stryker disable next-line StringLiteral: the operation only names a store error that is swallowed here
    boundedStoreCall(settings, name, 'renew', () => store.renew(this.storeKey, this.token, leaseMs), false).then(
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

/**
 * Whether `error` frees the key: one of `releaseOn`, a refusal raised
 * before any layer ran (a key function that answered no string), or a
 * connection that was never made (the request never left).
 */
function releases(releaseOn: ErrorMatcher, error: unknown): boolean {
  return releaseOn.matches(error) || isRefusal(error) || neverSent(error);
}
