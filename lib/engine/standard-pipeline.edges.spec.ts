import { VirtualClock } from '../kernel/clock';
import { contextStorage, ResilienceContext } from '../kernel/context';
import { DeadlineExceededError } from '../kernel/errors';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { StandardPipeline } from './standard-pipeline';

class Unavailable extends Error {
  readonly status = 503;
}

/** Paths of the fused pipeline that the differential test reaches only by chance. */
describe('StandardPipeline edges', () => {
  it('falls back when a retry on a returned value ends in an error', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      random: () => 0.5,
      retry: {
        instances: {
          r: {
            maxAttempts: 2,
            waitDuration: 100,
            jitter: 'none',
            retryOnResult: (value: unknown) => value === 'stale',
          },
        },
      },
    });
    const fallback = new FallbackPolicy('m', [
      { errors: [Unavailable], handler: (_args, error) => `recovered from ${(error as Error).message}` },
    ]);
    let calls = 0;
    const pipeline = new StandardPipeline(
      { fallback, retry: registry.retry('r') },
      () => (++calls === 1 ? Promise.resolve('stale') : Promise.reject(new Unavailable('down'))),
      clock,
    );

    const outcome = pipeline.run([]);
    await clock.advance(100);

    await expect(outcome).resolves.toBe('recovered from down');
    expect(calls).toBe(2);
  });

  it('gives the bulkhead permit back when the request deadline has already passed', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
      bulkhead: { instances: { bh: { maxConcurrentCalls: 1, maxWaitDuration: 0 } } },
    });
    const bulkhead = registry.bulkhead('bh');
    let calls = 0;
    const pipeline = new StandardPipeline({ timeLimiter: registry.timeLimiter('tl'), bulkhead }, () => ++calls, clock);
    const request = new ResilienceContext(clock, clock.now() + 50);
    await clock.advance(50);

    await expect(contextStorage.run(request, () => pipeline.run([]))).rejects.toBeInstanceOf(DeadlineExceededError);

    expect(calls).toBe(0);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    await expect(pipeline.run([])).resolves.toBe(1);
  });

  it('refuses a call whose deadline has passed before the bulkhead, as the nested order does', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
      bulkhead: { instances: { bh: { maxConcurrentCalls: 1, maxWaitDuration: 0 } } },
    });
    const bulkhead = registry.bulkhead('bh');
    const seen: string[] = [];
    bulkhead.onCallPermitted(() => seen.push('permitted'));
    bulkhead.onCallFinished(() => seen.push('finished'));
    const pipeline = new StandardPipeline({ timeLimiter: registry.timeLimiter('tl'), bulkhead }, () => 'value', clock);
    const request = new ResilienceContext(clock, clock.now() + 50);
    await clock.advance(50);

    await expect(contextStorage.run(request, () => pipeline.run([]))).rejects.toBeInstanceOf(DeadlineExceededError);

    expect(seen).toEqual([]);
  });

  it('retries a timed-out attempt within the request deadline, as the nested order does', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      retry: { instances: { r: { maxAttempts: 3, waitDuration: 100, jitter: 'none' } } },
      timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
    });
    let calls = 0;
    const hang = () => {
      calls++;
      return new Promise(() => undefined);
    };
    const pipeline = new StandardPipeline(
      { retry: registry.retry('r'), timeLimiter: registry.timeLimiter('tl') },
      hang,
      clock,
    );
    const request = new ResilienceContext(clock, clock.now() + 900);
    let settledAt = -1;
    const outcome = contextStorage.run(request, () => pipeline.run([])).finally(() => (settledAt = clock.now()));
    outcome.catch(() => undefined);

    // The first attempt times out at 500 ms; the retry at 600 ms has 300 ms left, so its limit is the deadline, at
    // 900 ms. The limit and the deadline pass at one instant: whichever timer fires first, the second attempt ends
    // with the time limiter's DeadlineExceededError, the last error of the call (ADR 0007, "A limit cut to the
    // deadline"). The caller's timer is armed first here, by the first attempt.
    await clock.advance(2000);

    await expect(outcome).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(settledAt).toBe(900);
    expect(calls).toBe(2);
  });

  it('takes no bulkhead permit and runs nothing under an aborted request scope, with or without a deadline', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
      bulkhead: { instances: { bh: { maxConcurrentCalls: 1, maxWaitDuration: 0 } } },
    });
    const bulkhead = registry.bulkhead('bh');
    let held = -1;
    const pipeline = new StandardPipeline(
      { timeLimiter: registry.timeLimiter('tl'), bulkhead },
      () => (held = bulkhead.metrics.availableConcurrentCalls),
      clock,
    );
    const request = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
    const reason = new Error('client went away');
    request.abort(reason);

    await expect(contextStorage.run(request, () => pipeline.run([]))).rejects.toMatchObject({
      name: 'AbortError',
      cause: reason,
    });
    expect(held).toBe(-1);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
  });
});
