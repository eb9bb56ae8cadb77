import * as fc from 'fast-check';
import { getEventListeners } from 'node:events';
import { VirtualClock } from '../../lib/kernel/clock';
import { contextStorage, currentSignal, ResilienceContext } from '../../lib/kernel/context';
import { ErrorMatcher } from '../../lib/config/error-matcher';
import { BulkheadFullError, CallNotPermittedError } from '../../lib/kernel/errors';
import { FallbackPolicy } from '../../lib/policies/fallback/fallback.policy';
import { downstreamIdempotencyKey } from '../../lib/features/idempotency/idempotency.context';
import { IdempotencyStore } from '../../lib/features/idempotency/idempotency-store';
import { IdempotentMethod } from '../../lib/features/idempotency/idempotent-method';
import { DEFAULT_RELEASE_ON } from '../../lib/features/idempotency/idempotent-target';
import { MemoryIdempotencyStore } from '../../lib/features/idempotency/memory-idempotency-store';
import { ResilienceRegistry } from '../../lib/registry/resilience.registry';
import { StandardPipeline } from '../../lib/engine/standard-pipeline';
import { StandardLayers } from '../../lib/engine/layers';
import { LaggingClock, layeredPipeline } from '../support/pipelines';

/**
 * The whole method pipeline (@Idempotent keyed call → Fallback → Retry →
 * CircuitBreaker → TimeLimiter → Bulkhead → method) under drawn fault
 * sequences: clients pay with one key each, retrying the same key; every
 * attempt that reaches the method charges, and the provider deduplicates
 * charges on the downstream key derived from the claim, as real ones do.
 * Each try is a request of its own, which its caller may cancel (abort its
 * signal) at a drawn point: before the call, during an attempt, during a
 * backoff wait, or after the answer.
 * Invariants: at most one charge per key, "rejected, not charged" only when nothing was charged, a late
 * result never a success, no attempt after the caller's abort, a wait that
 * ends at the abort, the abort as the answer unless a success came first,
 * and once all is settled no permit, breaker permission or listener is
 * left behind, and the breaker recorded each call that reached the method once.
 */
type Fault = 'success' | 'failure' | 'timeout' | 'late' | 'effectThenBreakerOpens';
type StoreFault = 'none' | 'failBefore' | 'failAfter';
type CancelPoint = 'none' | 'before' | 'attempt' | 'wait' | 'after';

/** Where a client's caller cancels: in try `tryIndex`, at its `nth` attempt or wait, `offsetMs` into a wait. */
interface Cancel {
  readonly point: CancelPoint;
  readonly tryIndex: number;
  readonly nth: number;
  readonly offsetMs: number;
}

/** One try of a client: a request of its own, and what became of it. */
interface Try {
  readonly id: string;
  readonly request: ResilienceContext;
  readonly reason: DOMException;
  invoked: number;
  waits: number;
  inWait: boolean;
  retried: boolean;
  replayed: boolean;
  settled: boolean;
  abortedAt?: number;
  abortPhase?: Exclude<CancelPoint, 'none'>;
  attemptsAfterAbort: number;
  settledAt?: number;
  answer?: unknown;
}

const LIMIT_MS = 20;

class Unavailable extends Error {
  readonly status = 503;
}

/** A store whose operations fail as drawn: before the write, or after it (the reply lost). */
function flaky(store: IdempotencyStore, faults: readonly StoreFault[]): IdempotencyStore {
  let op = 0;
  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const fault = faults[op++ % faults.length];
      if (fault === 'failBefore') throw new Error('store unavailable');
      const result = await fn.apply(store, args);
      if (fault === 'failAfter') throw new Error('store reply lost');
      return result;
    };
  return {
    claim: wrap(store.claim),
    complete: wrap(store.complete),
    release: wrap(store.release),
    renew: wrap(store.renew),
    get: store.get.bind(store),
    cleanupExpired: store.cleanupExpired.bind(store),
  };
}

interface Scenario {
  readonly kind: 'standard' | 'layered';
  /** With a "rejected, not charged" fallback for refusals, or without (the refusal then reaches @Idempotent). */
  readonly fallback: boolean;
  readonly lagMs: number;
  /** Each request's deadline: none, or a day away (the time limiter then refuses an aborted request at once). */
  readonly deadline: 'none' | 'day';
  readonly clients: ReadonlyArray<{
    readonly faults: readonly Fault[];
    readonly tries: number;
    readonly gapMs: number;
    readonly startMs: number;
    readonly cancel: Cancel;
  }>;
  readonly storeFaults: readonly StoreFault[];
}

async function play(scenario: Scenario) {
  const clock = new VirtualClock();
  const registry = new ResilienceRegistry({
    clock: new LaggingClock(clock, scenario.lagMs),
    random: () => 0.5,
    retry: { instances: { pay: { maxAttempts: 3, waitDuration: 10, jitter: 'none' } } },
    circuitBreaker: {
      instances: {
        pay: {
          slidingWindowSize: 4,
          minimumNumberOfCalls: 2,
          failureRateThreshold: 50,
          waitDurationInOpenState: 100,
          permittedNumberOfCallsInHalfOpenState: 1,
        },
      },
    },
    timeLimiter: { instances: { pay: { timeoutDuration: LIMIT_MS } } },
    bulkhead: { instances: { pay: { maxConcurrentCalls: 2, maxWaitDuration: 5, queueCapacity: 1 } } },
  });
  const breaker = registry.circuitBreaker('pay');
  const bulkhead = registry.bulkhead('pay');
  const charges = new Map<string, Set<string>>();
  const chargesInTry = new Map<string, number>();
  const attempts = new Map<number, number>();
  const tries = new Map<string, Try>();
  const triesByRequest = new Map<ResilienceContext, Try>();
  const cancelOf = (tryId: string): Cancel | undefined => {
    const [client, index] = tryId.split('/').map(Number);
    const cancel = scenario.clients[client].cancel;
    return cancel.tryIndex === index ? cancel : undefined;
  };
  const abort = (t: Try): void => {
    if (t.abortedAt !== undefined) return;
    t.abortedAt = clock.now();
    t.abortPhase = t.settled ? 'after' : t.inWait ? 'wait' : t.invoked === 0 && !t.retried ? 'before' : 'attempt';
    t.request.abort(t.reason);
  };
  // Attempts and waits of a try, seen from the retry's events, which come in the try's request context.
  const tryInContext = () => triesByRequest.get(contextStorage.getStore()!);
  let breakerRecorded = 0;
  let reachedMethod = 0;

  // The provider: every attempt that reaches it charges, then answers as the client's fault script says.
  const invoke = (args: unknown[]): Promise<unknown> => {
    const [client, key, tryId] = args as [number, string, string];
    reachedMethod++;
    const t = tries.get(tryId)!;
    if (t.request.aborted) t.attemptsAfterAbort++;
    t.inWait = false;
    t.invoked++;
    const n = attempts.get(client) ?? 0;
    attempts.set(client, n + 1);
    charges.set(key, (charges.get(key) ?? new Set()).add(downstreamIdempotencyKey('charge')));
    chargesInTry.set(tryId, (chargesInTry.get(tryId) ?? 0) + 1);
    void currentSignal();
    const cancel = cancelOf(tryId);
    if (cancel?.point === 'attempt' && t.invoked - 1 === cancel.nth) abort(t);
    const faults = scenario.clients[client].faults;
    const fault = faults[n % faults.length];
    return new Promise((resolve, reject) => {
      switch (fault) {
        case 'success':
          return clock.setTimeout(() => resolve({ charged: key, late: false }), 1);
        case 'failure':
          return clock.setTimeout(() => reject(new Unavailable('provider busy')), 1);
        case 'timeout':
          return clock.setTimeout(() => resolve({ charged: key, late: true }), 200);
        case 'late':
          return clock.setTimeout(() => resolve({ charged: key, late: true }), LIMIT_MS + 1 + (n % 3));
        case 'effectThenBreakerOpens':
          return clock.setTimeout(() => {
            breaker.transitionToOpenState();
            reject(new Unavailable('provider busy'));
          }, 1);
      }
    });
  };

  const layers: StandardLayers = {
    fallback: scenario.fallback
      ? new FallbackPolicy('Payments.pay', [
          { errors: [CallNotPermittedError, BulkheadFullError], handler: () => 'rejected, not charged' },
        ])
      : undefined,
    retry: registry.retry('pay'),
    circuitBreaker: breaker,
    timeLimiter: registry.timeLimiter('pay'),
    bulkhead,
  };
  const retry = registry.retry('pay');
  retry.onAttempt(() => {
    const t = tryInContext();
    if (t === undefined) return;
    if (t.request.aborted) t.attemptsAfterAbort++;
    t.inWait = false;
    t.retried = true;
  });
  retry.onRetry(() => {
    const t = tryInContext();
    if (t === undefined) return;
    t.inWait = true;
    const cancel = cancelOf(t.id);
    if (cancel?.point === 'wait' && t.waits++ === cancel.nth)
      clock.setTimeout(() => {
        if (t.inWait && !t.settled) abort(t);
      }, cancel.offsetMs);
  });
  breaker.onSuccess(() => breakerRecorded++);
  breaker.onError(() => breakerRecorded++);
  breaker.onIgnoredError(() => breakerRecorded++);
  let bulkheadRejected = 0;
  let permitted = 0;
  let finished = 0;
  bulkhead.onCallRejected(() => bulkheadRejected++);
  bulkhead.onCallPermitted(() => permitted++);
  bulkhead.onCallFinished(() => finished++);
  const run =
    scenario.kind === 'standard'
      ? new StandardPipeline(layers, invoke, clock).run
      : layeredPipeline(layers, invoke, clock);
  const idempotent = new IdempotentMethod(
    'Payments.pay',
    {
      store: flaky(new MemoryIdempotencyStore({ clock }), scenario.storeFaults),
      clock,
      ttlMs: 3_600_000,
      leaseMs: 30_000,
      releaseOn: new ErrorMatcher(DEFAULT_RELEASE_ON),
      route: false,
      required: true,
      transactional: false,
      storeTimeoutMs: 2000,
      key: (_client: unknown, key: unknown) => key as string,
      fingerprint: (client: unknown) => client,
    },
    (outcome) => {
      const t = tryInContext();
      if (outcome === 'replayed' && t !== undefined) t.replayed = true;
    },
    () => undefined,
  );

  const answers: Array<{ tryId: string; answer: unknown }> = [];
  let running = scenario.clients.length;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const deadline = scenario.deadline === 'none' ? Number.POSITIVE_INFINITY : 24 * 3_600_000;
  scenario.clients.forEach((client, c) => {
    void (async () => {
      await sleep(client.startMs);
      for (let i = 0; i < client.tries; i++) {
        const tryId = `${c}/${i}`;
        const t: Try = {
          id: tryId,
          request: new ResilienceContext(clock, clock.now() + deadline),
          reason: new DOMException(`client ${tryId} cancelled`, 'AbortError'),
          invoked: 0,
          waits: 0,
          inWait: false,
          retried: false,
          replayed: false,
          settled: false,
          attemptsAfterAbort: 0,
        };
        tries.set(tryId, t);
        triesByRequest.set(t.request, t);
        const cancel = cancelOf(tryId);
        if (cancel?.point === 'before') abort(t);
        const answer = await contextStorage
          .run(t.request, () => idempotent.call(run, [c, `key-${c}`, tryId]))
          .then(
            (value) => value,
            (error: unknown) => ({ error }),
          );
        t.settled = true;
        t.settledAt = clock.now();
        t.answer = answer;
        answers.push({ tryId, answer });
        if (cancel?.point === 'after') abort(t);
        await sleep(client.gapMs);
      }
      running--;
    })();
  });
  for (let step = 0; step < 10_000 && running > 0; step++) if (!(await clock.runNext())) await VirtualClock.settle();
  expect(running).toBe(0);
  // Let work that outlived its attempt (hung calls, late answers) end.
  await clock.advance(1000);

  for (const [key, made] of charges) expect({ key, charges: made.size }).toEqual({ key, charges: 1 });
  for (const { tryId, answer } of answers) {
    if (answer === 'rejected, not charged')
      expect({ tryId, charged: chargesInTry.get(tryId) ?? 0 }).toEqual({ tryId, charged: 0 });
    if (typeof answer === 'object' && answer !== null && 'late' in answer)
      expect({ tryId, late: (answer as { late: boolean }).late }).toEqual({ tryId, late: false });
  }
  for (const t of tries.values()) {
    if (t.abortedAt === undefined || t.abortPhase === 'after') continue;
    const seen = { tryId: t.id, phase: t.abortPhase };
    expect({ ...seen, attemptsAfterAbort: t.attemptsAfterAbort }).toEqual({ ...seen, attemptsAfterAbort: 0 });
    if (t.abortPhase === 'wait')
      expect({ ...seen, settledAt: t.settledAt }).toEqual({ ...seen, settledAt: t.abortedAt });
    expect({ ...seen, answer: describeAnswer(t) }).toEqual({
      ...seen,
      answer: expect.stringMatching(allowedAfterAbort(t)),
    });
  }
  expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 2, maxAllowedConcurrentCalls: 2, queueDepth: 0 });
  // Each attempt the breaker let through ended once: at the method, or refused by the bulkhead inside it.
  expect({ breakerRecorded }).toEqual({ breakerRecorded: reachedMethod + bulkheadRejected });
  expect({ permitted, finished }).toEqual({ permitted: reachedMethod, finished: reachedMethod });
  if (breaker.state === 'HALF_OPEN') expect(breaker.tryAcquirePermission()).toBe(true);
  for (const t of tries.values()) {
    expect({ tryId: t.id, listeners: getEventListeners(t.request.signal, 'abort').length }).toEqual({
      tryId: t.id,
      listeners: 0,
    });
    expect({ tryId: t.id, watching: t.request.watching }).toEqual({ tryId: t.id, watching: 0 });
    t.request.dispose();
  }
  registry.dispose();
}

/** A try's answer in a word: `abort` (its own caller's), `success`, `replay` (a stored answer given again), `fallback`, or the error's class. */
function describeAnswer(t: Try): string {
  const answer = t.answer;
  if (t.replayed) return 'replay';
  if (answer === 'rejected, not charged') return 'fallback';
  if (typeof answer === 'object' && answer !== null && 'error' in answer) {
    const error = answer.error;
    // The caller's cancellation: its AbortError, caused by the reason it aborted with.
    const caused = (error as { cause?: unknown }).cause === t.reason;
    return error === t.reason || caused ? 'abort' : (error as Error).constructor.name;
  }
  return 'success';
}

/**
 * What a try cancelled before it settled may answer: its abort; once an
 * attempt has reached the provider, the last error of one (a cancelled call
 * ends with it, as in Resilience4j and cockatiel); a success that was under
 * way when the abort came (an attempt already running); a replay of an
 * earlier try's success; or an answer of the idempotency layer (a key still
 * held, a store that failed), which runs before the pipeline.
 */
function allowedAfterAbort(t: Try): RegExp {
  if (t.abortPhase === 'attempt')
    return /^(abort|success|Unavailable|TimeoutExceededError|replay|Idempotency\w+Error)$/;
  if (t.abortPhase === 'wait') return /^(abort|Unavailable|TimeoutExceededError|replay|Idempotency\w+Error)$/;
  return /^(abort|replay|Idempotency\w+Error)$/;
}

describe('the pipeline under drawn faults', () => {
  it("charges at most once per key, says 'not charged' only when nothing was, never answers late, stops at the caller's abort, and leaks no permit or listener", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          kind: fc.constantFrom<Scenario['kind']>('standard', 'layered'),
          fallback: fc.boolean(),
          lagMs: fc.constantFrom(0, 3),
          deadline: fc.constantFrom<Scenario['deadline']>('none', 'day'),
          clients: fc.array(
            fc.record({
              cancel: fc.record({
                point: fc.constantFrom<CancelPoint>('none', 'before', 'attempt', 'wait', 'after'),
                tryIndex: fc.integer({ min: 0, max: 2 }),
                nth: fc.integer({ min: 0, max: 2 }),
                offsetMs: fc.integer({ min: 1, max: 9 }),
              }),
              faults: fc.array(
                fc.constantFrom<Fault>('success', 'failure', 'timeout', 'late', 'effectThenBreakerOpens'),
                { minLength: 1, maxLength: 6 },
              ),
              tries: fc.integer({ min: 1, max: 3 }),
              gapMs: fc.constantFrom(0, 50, 150),
              startMs: fc.integer({ min: 0, max: 30 }),
            }),
            { minLength: 1, maxLength: 4 },
          ),
          storeFaults: fc.array(fc.constantFrom<StoreFault>('none', 'none', 'none', 'failBefore', 'failAfter'), {
            minLength: 1,
            maxLength: 8,
          }),
        }),
        play,
      ),
      { numRuns: 300 },
    );
  });
});
