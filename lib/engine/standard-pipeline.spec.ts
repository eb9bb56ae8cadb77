import * as fc from 'fast-check';
import { VirtualClock } from '../kernel/clock';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { StandardPipeline } from './standard-pipeline';

import { CallNotPermittedError } from '../kernel/errors';
import { layeredPipeline } from '../../test/support/pipelines';

type Behaviour = 'ok' | 'unavailable' | 'notFound' | 'hang' | 'slow' | 'throwSync';

class Unavailable extends Error {
  readonly status = 503;
}
class NotFound extends Error {
  readonly status = 404;
}

const OPTIONS = {
  // A slow answer is retried as a value, so exhausted value retries are compared too.
  retry: {
    instances: {
      r: {
        maxAttempts: 3,
        waitDuration: 100,
        jitter: 'none' as const,
        retryOnResult: (value: unknown) => value === 'slow',
      },
    },
  },
  circuitBreaker: {
    instances: {
      cb: {
        slidingWindowSize: 4,
        minimumNumberOfCalls: 4,
        failureRateThreshold: 50,
        waitDurationInOpenState: 1000,
        permittedNumberOfCallsInHalfOpenState: 2,
        slowCallDurationThreshold: 250,
        slowCallRateThreshold: 75,
      },
    },
  },
  timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
  bulkhead: { instances: { bh: { maxConcurrentCalls: 2, maxWaitDuration: 200, queueCapacity: 1 } } },
};

/** Which layers a method has; every combination is checked. */
type LayerSet = { fallback: boolean; retry: boolean; circuitBreaker: boolean; timeLimiter: boolean; bulkhead: boolean };

function build(layers: LayerSet, kind: 'standard' | 'layered') {
  const clock = new VirtualClock();
  const registry = new ResilienceRegistry({ ...OPTIONS, clock, random: () => 0.5 });
  const policies = {
    fallback: layers.fallback
      ? new FallbackPolicy('m', [{ errors: [CallNotPermittedError], handler: () => 'refused' }])
      : undefined,
    retry: layers.retry ? registry.retry('r') : undefined,
    circuitBreaker: layers.circuitBreaker ? registry.circuitBreaker('cb') : undefined,
    timeLimiter: layers.timeLimiter ? registry.timeLimiter('tl') : undefined,
    bulkhead: layers.bulkhead ? registry.bulkhead('bh') : undefined,
  };
  let script: Behaviour[] = [];
  let calls = 0;
  const attempts = new Map<unknown, number>();
  // Each call's n-th attempt behaves the same on both sides, whatever order attempts happen to start in.
  const invoke = (id: unknown): unknown => {
    calls++;
    const attempt = attempts.get(id) ?? 0;
    attempts.set(id, attempt + 1);
    const behaviour = script[((id as number) * 7 + attempt) % script.length];
    switch (behaviour) {
      case 'ok':
        return Promise.resolve('value');
      case 'unavailable':
        return Promise.reject(new Unavailable('busy'));
      case 'notFound':
        return Promise.reject(new NotFound('none'));
      case 'throwSync':
        throw new Unavailable('sync');
      case 'hang':
        return new Promise((resolve) => clock.setTimeout(() => resolve('late'), 2000));
      case 'slow':
        return new Promise((resolve) => clock.setTimeout(() => resolve('slow'), 300));
    }
  };
  const run =
    kind === 'standard'
      ? new StandardPipeline(policies, (args) => invoke(args[0]), clock).run
      : layeredPipeline(policies, (args) => invoke(args[0]), clock);
  return {
    clock,
    policies,
    setScript: (s: Behaviour[]) => (script = s),
    run,
    calls: () => calls,
  };
}

function snapshot(side: ReturnType<typeof build>) {
  return {
    calls: side.calls(),
    now: side.clock.now(),
    retry: side.policies.retry?.metrics,
    breaker: side.policies.circuitBreaker && {
      state: side.policies.circuitBreaker.state,
      ...side.policies.circuitBreaker.metrics,
    },
    bulkhead: side.policies.bulkhead?.metrics,
  };
}

const describeOutcome = (settled: PromiseSettledResult<unknown>) =>
  settled.status === 'fulfilled'
    ? { value: settled.value }
    : { error: (settled.reason as Error).constructor.name, name: (settled.reason as Error).name };

describe('StandardPipeline', () => {
  it('gives the same outcomes, timings and policy state as nesting each policy', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          fallback: fc.boolean(),
          retry: fc.boolean(),
          circuitBreaker: fc.boolean(),
          timeLimiter: fc.boolean(),
          bulkhead: fc.boolean(),
        }),
        fc.array(fc.constantFrom<Behaviour>('ok', 'unavailable', 'notFound', 'hang', 'slow', 'throwSync'), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.array(
          fc.record({ concurrent: fc.integer({ min: 1, max: 4 }), advance: fc.constantFrom(0, 50, 150, 400, 1100) }),
          { minLength: 1, maxLength: 8 },
        ),
        async (layers, script, steps) => {
          const sides = [build(layers, 'standard'), build(layers, 'layered')];
          for (const side of sides) side.setScript(script);
          const outcomes: Array<Array<{ id: number; at: number; outcome: unknown }>> = [[], []];
          let id = 0;
          for (const step of steps) {
            // Calls overlap through the virtual clock (hanging and slow calls). Each starts 1 ms after the
            // previous one: every duration is a multiple of 50 ms and there are fewer than 50 calls, so no
            // two calls' events fall on one instant, where the order of same-time timers would decide.
            for (let c = 0; c < step.concurrent; c++, id++) {
              const callId = id;
              sides.forEach((side, i) => {
                side.run([callId]).then(
                  (value) =>
                    outcomes[i].push({
                      id: callId,
                      at: side.clock.now(),
                      outcome: describeOutcome({ status: 'fulfilled', value }),
                    }),
                  (reason) =>
                    outcomes[i].push({
                      id: callId,
                      at: side.clock.now(),
                      outcome: describeOutcome({ status: 'rejected', reason }),
                    }),
                );
              });
              for (const side of sides) await side.clock.advance(1);
            }
            for (const side of sides) await side.clock.advance(step.advance);
            expect(snapshot(sides[0])).toEqual(snapshot(sides[1]));
          }
          for (const side of sides) await side.clock.advance(10_000);
          const sort = (list: Array<{ id: number; at: number; outcome: unknown }>) =>
            list.map((o) => JSON.stringify(o)).sort();
          expect(sort(outcomes[0])).toEqual(sort(outcomes[1]));
          expect(snapshot(sides[0])).toEqual(snapshot(sides[1]));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('gives the bulkhead permit back only when a timed-out call really ends', async () => {
    const side = build(
      { fallback: false, retry: false, circuitBreaker: false, timeLimiter: true, bulkhead: true },
      'standard',
    );
    side.setScript(['hang']);
    const outcome = side.run([0]).catch((e: unknown) => e as Error);
    await side.clock.advance(500);
    expect(((await outcome) as Error).constructor.name).toBe('TimeoutExceededError');
    expect(side.policies.bulkhead!.metrics.availableConcurrentCalls).toBe(1);
    await side.clock.advance(1500);
    expect(side.policies.bulkhead!.metrics.availableConcurrentCalls).toBe(2);
  });
});

describe('StandardPipeline: clock readings', () => {
  /** A virtual clock that counts its readings. */
  class CountingClock extends VirtualClock {
    readings = 0;
    override now(): number {
      this.readings++;
      return super.now();
    }
  }

  it('a happy-path call of the full stack reads the clock twice: once as it starts, once as it ends', async () => {
    const clock = new CountingClock();
    const registry = new ResilienceRegistry({ ...OPTIONS, clock, random: () => 0.5 });
    const pipeline = new StandardPipeline(
      {
        fallback: new FallbackPolicy('m', [{ errors: [CallNotPermittedError], handler: () => 'refused' }]),
        retry: registry.retry('r'),
        circuitBreaker: registry.circuitBreaker('cb'),
        timeLimiter: registry.timeLimiter('tl'),
        bulkhead: registry.bulkhead('bh'),
      },
      async () => 'ok',
      clock,
    );
    await pipeline.run([]);
    clock.readings = 0;
    for (let i = 0; i < 10; i++) await expect(pipeline.run([])).resolves.toBe('ok');
    expect(clock.readings).toBe(20);
  });
});
