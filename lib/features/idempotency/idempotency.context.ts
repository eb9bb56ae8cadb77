import { AsyncLocalStorage } from 'node:async_hooks';
import { deriveDownstreamKey } from './idempotency-key';
import { NOT_TRANSACTIONAL, OUTSIDE_IDEMPOTENT_CALL } from './idempotency.messages';
import { PostgresPoolClient } from './transactional-store';

/**
 * One claimed run of a protected method: what the helpers below read while
 * it runs. `owner` tells the pipeline layer which method the scope was
 * opened for, so a nested protected call is not mistaken for it.
 */
export class IdempotencyScope {
  /**
   * Whether the protected method was entered in this run: the handshake
   * that tells a failure of the method from a failure before it.
   *
   * - Set: by `IdempotentRun.open`, true for a keyed call (the run calls the
   *   method itself); false over HTTP, where the interceptor opens the run
   *   before Nest's pipes and later interceptors. The method's pipeline
   *   layer (`IdempotentMethod.call` / `observe`) then sets it once, on the
   *   first entry whose scope it owns; a later entry (a recursive call, a
   *   retry placed outside this layer) finds it set and does not take the
   *   start again.
   * - Read: by `IdempotentRun.settlementForAnswer`, when the run failed.
   * - Guarantees: false means the method was never entered, so it had no
   *   effect and the key is released for a retry; true means it may have
   *   had its effect, so `releaseOn` and the answer's status decide.
   */
  started = false;

  /**
   * @param owner - the protected method's policy object
   * @param target - `Class.method`, for messages
   * @param storeKey - the scoped key in the store
   * @param createdAt - when the operation was first claimed (kept across takeovers)
   * @param transaction - what a transactional method writes through: a pg client inside BEGIN, or the
   *   `@nestjs-cls/transactional` adapter's transaction
   */
  constructor(
    readonly owner: object,
    readonly target: string,
    readonly storeKey: string,
    readonly createdAt: number,
    readonly transaction: unknown,
  ) {}
}

/** The async-local slot of the current protected run. */
export const idempotencyStorage = new AsyncLocalStorage<IdempotencyScope>();

/**
 * A stable idempotency key for a call the current `@Idempotent` method makes
 * to another service (a payment provider's `Idempotency-Key`). Every attempt
 * at the same logical operation, in any process, gets the same value, so a
 * retry after a crash cannot charge twice downstream; `suffix` tells apart
 * several downstream calls of one operation. A reconciler gets the same
 * value from `stale.downstreamKey(suffix)`.
 *
 * @throws Error outside a method protected by `@Idempotent`
 * @example
 * ```ts
 * await stripe.paymentIntents.create(params, { idempotencyKey: downstreamIdempotencyKey('charge') });
 * ```
 */
export function downstreamIdempotencyKey(suffix = ''): string {
  const scope = idempotencyStorage.getStore();
  if (scope === undefined) throw new Error(OUTSIDE_IDEMPOTENT_CALL('downstreamIdempotencyKey'));
  return deriveDownstreamKey(scope.storeKey, scope.createdAt, suffix);
}

/**
 * The database connection of the current transactional `@Idempotent`
 * method (a `pg` `PoolClient` inside `BEGIN`). Make the business writes on
 * it: they commit together with the key's completion, or not at all. Do not
 * commit, roll back or release it yourself. With `@nestjs-cls/transactional`
 * configured, the run's transaction is the `TransactionHost`'s: write
 * through `TransactionHost.tx` (this gives the same object).
 *
 * @throws Error outside such a method
 * @example
 * ```ts
 * @Post() @Idempotent({ transactional: true })
 * async pay(@Body() body: PaymentDto) {
 *   const { rows } = await idempotencyTransaction().query('INSERT INTO ledger (pence) VALUES ($1) RETURNING id', [body.pence]);
 *   return { id: rows[0].id };
 * }
 * ```
 */
export function idempotencyTransaction<C extends PostgresPoolClient = PostgresPoolClient>(): C {
  const scope = idempotencyStorage.getStore();
  if (scope === undefined) throw new Error(OUTSIDE_IDEMPOTENT_CALL('idempotencyTransaction'));
  if (scope.transaction === undefined) throw new Error(NOT_TRANSACTIONAL(scope.target));
  return scope.transaction as C;
}
