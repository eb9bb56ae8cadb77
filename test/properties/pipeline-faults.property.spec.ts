import * as fc from 'fast-check';
import { getEventListeners } from 'node:events';
import { VirtualClock } from '../../lib/clock';
import { contextStorage, currentSignal, ResilienceContext } from '../../lib/context';
import { ErrorMatcher } from '../../lib/error-matcher';
import { BulkheadFullError, CallNotPermittedError } from '../../lib/errors';
import { FallbackPolicy } from '../../lib/fallback/fallback';
import { downstreamIdempotencyKey } from '../../lib/idempotency/idempotency.context';
import { IdempotencyStore } from '../../lib/idempotency/idempotency-store';
import { IdempotentMethod } from '../../lib/idempotency/idempotent-method';
import { DEFAULT_RELEASE_ON } from '../../lib/idempotency/idempotent-target';
import { MemoryIdempotencyStore } from '../../lib/idempotency/memory-idempotency-store';
import { ResilienceRegistry } from '../../lib/resilience.registry';
import { StandardLayers, StandardPipeline } from '../../lib/standard-pipeline';
import { LaggingClock, nestedPipeline } from '../support/pipelines';

/**
 * The whole method pipeline (@Idempotent keyed call → Fallback → Retry →
 * CircuitBreaker → TimeLimiter → Bulkhead → method) under drawn fault
 * sequences: clients pay with one key each, retrying the same key; every
 * attempt that reaches the method charges, and the provider deduplicates
 * charges on the downstream key derived from the claim, as real ones do.
 * Invariants: at most one charge per key, "rejected, not charged" only when nothing was charged, a late
 * result never a success, and once all is settled no permit or listener
 * is left behind.
 */
type Fault = 'success' | 'failure' | 'timeout' | 'late' | 'effectThenBreakerOpens';
type StoreFault = 'none' | 'failBefore' | 'failAfter';

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
  readonly kind: 'standard' | 'nested';
  /** With a "rejected, not charged" fallback for refusals, or without (the refusal then reaches @Idempotent). */
  readonly fallback: boolean;
  readonly lagMs: number;
  readonly clients: ReadonlyArray<{
    readonly faults: readonly Fault[];
    readonly tries: number;
    readonly gapMs: number;
    readonly startMs: number;
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

  // The provider: every attempt that reaches it charges, then answers as the client's fault script says.
  const invoke = (args: unknown[]): Promise<unknown> => {
    const [client, key, tryId] = args as [number, string, string];
    const n = attempts.get(client) ?? 0;
    attempts.set(client, n + 1);
    charges.set(key, (charges.get(key) ?? new Set()).add(downstreamIdempotencyKey('charge')));
    chargesInTry.set(tryId, (chargesInTry.get(tryId) ?? 0) + 1);
    void currentSignal();
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
  const run =
    scenario.kind === 'standard' ? new StandardPipeline(layers, invoke, clock).run : nestedPipeline(layers, invoke);
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
    () => undefined,
    () => undefined,
  );

  const request = new ResilienceContext(clock, clock.now() + 24 * 3_600_000);
  const requestSignal = request.signal;
  const answers: Array<{ tryId: string; answer: unknown }> = [];
  let running = scenario.clients.length;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  scenario.clients.forEach((client, c) => {
    void contextStorage.run(request, async () => {
      await sleep(client.startMs);
      for (let t = 0; t < client.tries; t++) {
        const tryId = `${c}/${t}`;
        const answer = await idempotent.call(run, [c, `key-${c}`, tryId]).then(
          (value) => value,
          (error: unknown) => ({ error: (error as Error).constructor.name }),
        );
        answers.push({ tryId, answer });
        await sleep(client.gapMs);
      }
      running--;
    });
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
  expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 2, maxAllowedConcurrentCalls: 2, queueDepth: 0 });
  if (breaker.state === 'HALF_OPEN') expect(breaker.tryAcquirePermission()).toBe(true);
  expect(getEventListeners(requestSignal, 'abort')).toHaveLength(0);
  request.dispose();
  registry.dispose();
}

describe('the pipeline under drawn faults', () => {
  it('charges at most once per key, says "not charged" only when nothing was, never answers late, and leaks no permit or listener', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          kind: fc.constantFrom<Scenario['kind']>('standard', 'nested'),
          fallback: fc.boolean(),
          lagMs: fc.constantFrom(0, 3),
          clients: fc.array(
            fc.record({
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
      { numRuns: 150 },
    );
  });
});
