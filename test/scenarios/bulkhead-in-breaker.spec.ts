import { Injectable } from '@nestjs/common';
import {
  Bulkhead,
  BulkheadFullError,
  CircuitBreaker,
  ResilienceModuleOptions,
  ResilienceRegistry,
  VirtualClock,
} from '../../lib';
import { bootScenario, track } from '../../scenarios/kit';
import { report } from '../support/report';

/*
 * A bulkhead of 10 inside a breaker, 40
 * simultaneous calls. The bulkhead refuses 30, and those refusals are our
 * own limit, not the dependency failing: the breaker ignores them and stays
 * CLOSED, its window holding only the 10 calls that reached the dependency.
 */

const WORK_MS = 100;
const CALLERS = 40;

@Injectable()
class Recommendations {
  started = 0;

  constructor(private readonly clock: VirtualClock) {}

  // Written bulkhead-first on purpose: the composition order puts the breaker outside either way.
  @Bulkhead('recommendations')
  @CircuitBreaker('recommendations')
  async forUser(user: number): Promise<number> {
    this.started++;
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, WORK_MS));
    return user;
  }
}

const options = (breaker: Record<string, unknown> = {}): ResilienceModuleOptions => ({
  bulkhead: { instances: { recommendations: { maxConcurrentCalls: 10, maxWaitDuration: 0 } } },
  circuitBreaker: {
    instances: {
      recommendations: { slidingWindowSize: 10, minimumNumberOfCalls: 10, failureRateThreshold: 50, ...breaker },
    },
  },
});

describe('scenario (c): bulkhead of 10 inside a breaker, 40 simultaneous calls', () => {
  it('the bulkhead refuses 30 and the breaker stays CLOSED, counting the 10 successes only', async () => {
    const { moduleRef, clock } = await bootScenario([Recommendations], options());
    const service = moduleRef.get(Recommendations);
    const registry = moduleRef.get(ResilienceRegistry);
    const breaker = registry.circuitBreaker('recommendations');
    const transitions: string[] = [];
    breaker.onStateTransition(({ from, to }) => void transitions.push(`${from}->${to}`));

    const calls = Array.from({ length: CALLERS }, (_, i) => track(clock, () => service.forUser(i)));
    await clock.advance(0);
    const rejected = calls.filter((c) => c.error !== undefined);
    expect(rejected).toHaveLength(30);
    expect(rejected.every((c) => c.error instanceof BulkheadFullError && c.settledAt === 0)).toBe(true);
    expect(service.started).toBe(10);
    expect(breaker.state).toBe('CLOSED');

    await clock.advance(WORK_MS);
    const admitted = calls.filter((c) => c.error === undefined);
    expect(admitted.map((c) => [c.value, c.settledAt])).toEqual(Array.from({ length: 10 }, (_, i) => [i, WORK_MS]));
    expect(breaker.state).toBe('CLOSED');
    expect(transitions).toEqual([]);
    expect(breaker.metrics).toMatchObject({
      failureRate: 0,
      numberOfBufferedCalls: 10,
      numberOfSuccessfulCalls: 10,
      numberOfFailedCalls: 0,
      numberOfNotPermittedCalls: 0,
    });
    expect(registry.bulkhead('recommendations').metrics.availableConcurrentCalls).toBe(10);

    report(
      `scenario (c): bulkhead 10 inside breaker (window 10, min 10, 50%), ${CALLERS} simultaneous calls\n` +
        `  bulkhead rejected ${rejected.length}, completed ${admitted.length}; breaker ${breaker.state}, ` +
        `buffered ${breaker.metrics.numberOfBufferedCalls} (successful ${breaker.metrics.numberOfSuccessfulCalls}, failed ${breaker.metrics.numberOfFailedCalls})`,
    );
    await moduleRef.close();
  });

  it('control: a breaker told to record BulkheadFullError would open on the same burst', async () => {
    const { moduleRef, clock } = await bootScenario(
      [Recommendations],
      options({ recordExceptions: ['BulkheadFullError'] }),
    );
    const service = moduleRef.get(Recommendations);
    const calls = Array.from({ length: CALLERS }, (_, i) => track(clock, () => service.forUser(i)));
    await clock.advance(WORK_MS);
    expect(calls.filter((c) => c.error instanceof BulkheadFullError)).toHaveLength(30);
    expect(moduleRef.get(ResilienceRegistry).circuitBreaker('recommendations').state).toBe('OPEN');
    await moduleRef.close();
  });
});
