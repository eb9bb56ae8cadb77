import { VirtualClock } from '../../kernel/clock';
import { ErrorMatcher } from '../../config/error-matcher';
import { IdempotencyKeyInProgressError, IdempotencyStoreUnavailableError } from '../../kernel/errors';
import { StoredResponse } from './idempotency-store';
import { STORE_CALL_TIMED_OUT } from './idempotency.messages';
import { IdempotencyReconciler } from './idempotency.options';
import { reconcileStaleKey } from './idempotency.reconciliation';
import { IdempotencyStart, IdempotencyTransport, IdempotentTarget } from './idempotent-target';
import { MemoryIdempotencyStore } from './memory-idempotency-store';

const LEASE = 10_000;
const TTL = 60_000;
const STORE_TIMEOUT = 2_000;
const TARGET = 'PaymentsController.pay';

/** A store whose `complete` never answers. */
class SilentOnComplete extends MemoryIdempotencyStore {
  override complete(): Promise<boolean> {
    return new Promise(() => undefined);
  }
}

interface Reconciled {
  readonly start: Promise<IdempotencyStart>;
  readonly store: MemoryIdempotencyStore;
  readonly clock: VirtualClock;
  readonly outcomes: string[];
}

/** Leaves key `k` in progress past its lease, takes it over, and hands it to `reconciler`. */
async function reconcile(
  reconciler: IdempotencyReconciler,
  transport: IdempotencyTransport = 'http',
  Store: typeof MemoryIdempotencyStore = MemoryIdempotencyStore,
): Promise<Reconciled> {
  const clock = new VirtualClock(0);
  const store = new Store({ clock });
  await store.claim('k', 'fp', { leaseMs: LEASE, ttlMs: TTL });
  await clock.advance(LEASE + 1);
  const claim = await store.claim('k', 'fp', { leaseMs: LEASE, ttlMs: TTL });
  if (claim.outcome !== 'stale') throw new Error(`expected a stale key, got ${claim.outcome}`);
  const outcomes: string[] = [];
  const target: IdempotentTarget = {
    name: TARGET,
    settings: {
      required: true,
      transactional: false,
      reconciler,
      store,
      ttlMs: TTL,
      leaseMs: LEASE,
      releaseOn: new ErrorMatcher(),
      route: transport === 'http',
      clock,
      storeTimeoutMs: STORE_TIMEOUT,
    },
    report: (outcome) => outcomes.push(outcome),
    warn: (message) => outcomes.push(`warn: ${message}`),
  };
  const start = reconcileStaleKey(target, 'k', 'client-key', claim.token, claim.record, { transport });
  return { start, store, clock, outcomes };
}

/** The answer a reconciler's `complete` stores and replays. */
async function completedWith(answer: Record<string, unknown>): Promise<StoredResponse> {
  const { start, store } = await reconcile(() => ({ action: 'complete', ...answer }) as never);
  const started = await start;
  if (started.kind !== 'replay') throw new Error(`expected a replay, got ${started.kind}`);
  expect(started.outcome).toBe('reconciled');
  expect(await store.get('k')).toMatchObject({ state: 'completed', response: started.response });
  return started.response;
}

describe('reconcileStaleKey', () => {
  describe("an HTTP reconciler's completion", () => {
    it('stores the status, the headers in lower case without Set-Cookie, and a string body as written', async () => {
      expect(
        await completedWith({
          status: 200,
          headers: { 'Set-Cookie': 'session=abc', 'X-Ledger-Id': 'L1', 'Content-Type': 'text/plain' },
          body: 'charged',
        }),
      ).toEqual({
        kind: 'http',
        status: 200,
        headers: { 'x-ledger-id': 'L1', 'content-type': 'text/plain' },
        body: 'charged',
      });
    });

    it('adds no content type to a string body', async () => {
      expect(await completedWith({ status: 201, body: 'charged' })).toEqual({
        kind: 'http',
        status: 201,
        headers: {},
        body: 'charged',
      });
    });

    it('writes any other body as JSON, typed as JSON unless a content type is given', async () => {
      expect(await completedWith({ status: 201, body: { id: 'pay_1' } })).toEqual({
        kind: 'http',
        status: 201,
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: '{"id":"pay_1"}',
      });
      expect(
        await completedWith({ status: 201, headers: { 'content-type': 'application/vnd.api+json' }, body: [1] }),
      ).toEqual({ kind: 'http', status: 201, headers: { 'content-type': 'application/vnd.api+json' }, body: '[1]' });
    });

    it('stores an empty body when none is given', async () => {
      expect(await completedWith({ status: 204 })).toEqual({ kind: 'http', status: 204, headers: {}, body: '' });
    });

    it.each([100, 599])('accepts status %s', async (status) => {
      expect(await completedWith({ status })).toMatchObject({ status });
    });

    it.each([99, 600, 200.5, '201', undefined])(
      'refuses status %p, naming the method and the value',
      async (status) => {
        const { start } = await reconcile(() => ({ action: 'complete', status }) as never);
        await expect(start).rejects.toThrow(
          new TypeError(
            `resilience4nest: the reconciler of @Idempotent on ${TARGET} completed an HTTP request without a valid 'status', got ${String(status)}`,
          ),
        );
      },
    );
  });

  it("stores a call's value as its result", async () => {
    const { start } = await reconcile(() => ({ action: 'complete', value: { id: 'pay_1' } }), 'call');
    expect(await start).toEqual({
      kind: 'replay',
      outcome: 'reconciled',
      response: { kind: 'result', value: { id: 'pay_1' } },
    });
  });

  it.each([undefined, null, { action: 'retry' }])(
    'refuses a verdict of %p with a TypeError naming it',
    async (verdict) => {
      const { start } = await reconcile(() => verdict as never);
      await expect(start).rejects.toThrow(
        new TypeError(
          `resilience4nest: the reconciler of @Idempotent on ${TARGET} returned ${JSON.stringify(verdict)}; expected { action: 'run' | 'wait' | 'complete', ... }`,
        ),
      );
    },
  );

  it('bounds the completion by storeTimeout, naming the store call', async () => {
    const { start, clock } = await reconcile(
      () => ({ action: 'complete', status: 201, body: 'ok' }),
      'http',
      SilentOnComplete,
    );
    const settled = start.then(
      () => undefined,
      (error: unknown) => error,
    );
    await clock.advance(STORE_TIMEOUT);
    const error = await settled;
    expect(error).toBeInstanceOf(IdempotencyStoreUnavailableError);
    expect((error as Error).message).toContain(STORE_CALL_TIMED_OUT('complete', STORE_TIMEOUT, false));
  });

  it('refuses with the lease when the reconciler says wait, and keeps the key', async () => {
    const { start, store } = await reconcile(() => ({ action: 'wait' }));
    const started = await start;
    expect(started).toMatchObject({ kind: 'refuse', outcome: 'kept_unknown' });
    expect((started as { error: unknown }).error).toEqual(new IdempotencyKeyInProgressError(TARGET, LEASE));
    expect(await store.get('k')).toMatchObject({ state: 'in_progress' });
  });
});
