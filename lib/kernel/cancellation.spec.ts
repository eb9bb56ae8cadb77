import { VirtualClock } from './clock';
import { contextStorage, currentSignal, ResilienceContext } from './context';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { track } from '../../test/support/outcome';

class Unavailable extends Error {
  readonly status = 503;
}

function registry(clock: VirtualClock) {
  return new ResilienceRegistry({
    clock,
    random: () => 0.5,
    retry: { instances: { slow: { maxAttempts: 3, waitDuration: 1000 } } },
    timeLimiter: { instances: { slow: { timeoutDuration: 1000 } } },
    circuitBreaker: { instances: { slow: {} } },
    bulkhead: { instances: { slow: { maxConcurrentCalls: 1 } } },
  });
}

/** A method that answers after `ms` unless its signal aborts first, when it rejects with the signal's reason. */
function answerAfter(clock: VirtualClock, ms: number, seen: AbortSignal[] = []) {
  return (signal: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      seen.push(signal);
      const timer = clock.setTimeout(() => resolve('late'), ms);
      signal.addEventListener('abort', () => {
        clock.clearTimeout(timer);
        reject(signal.reason);
      });
    });
}

describe('cancellation: one meaning on every path', () => {
  describe('a time limit stops its work outside any request scope', () => {
    it('timeLimiter.execute hands fn a signal that aborts at the limit', async () => {
      const clock = new VirtualClock();
      const seen: AbortSignal[] = [];
      const call = track(
        clock,
        registry(clock)
          .timeLimiter('slow')
          .execute(answerAfter(clock, 5000, seen)),
      );
      expect(seen).toHaveLength(1);
      expect(seen[0].aborted).toBe(false);
      await clock.advance(1000);
      expect(seen[0].aborted).toBe(true);
      expect(call.error).toMatchObject({ name: 'TimeoutExceededError' });
    });

    it('pipeline.execute hands fn a signal that aborts at the limit', async () => {
      const clock = new VirtualClock();
      const seen: AbortSignal[] = [];
      const call = track(
        clock,
        registry(clock)
          .pipeline({ timeLimiter: 'slow', circuitBreaker: 'slow' })
          .execute(answerAfter(clock, 5000, seen)),
      );
      expect(seen[0]).toBeInstanceOf(AbortSignal);
      await clock.advance(1000);
      expect(seen[0].aborted).toBe(true);
      expect(call.error).toMatchObject({ name: 'TimeoutExceededError' });
    });

    it('currentSignal() read before the first await is the attempt signal, aborted at the limit', async () => {
      const clock = new VirtualClock();
      const seen: (AbortSignal | undefined)[] = [];
      const call = track(
        clock,
        registry(clock)
          .timeLimiter('slow')
          .execute(() => {
            seen.push(currentSignal());
            return answerAfter(clock, 5000)(seen[0] ?? new AbortController().signal);
          }),
      );
      expect(seen[0]).toBeInstanceOf(AbortSignal);
      await clock.advance(1000);
      expect(seen[0]?.aborted).toBe(true);
      expect(call.error).toMatchObject({ name: 'TimeoutExceededError' });
    });

    it('a pipeline without a time limit still gives every attempt a signal', async () => {
      const clock = new VirtualClock();
      const seen: AbortSignal[] = [];
      await registry(clock)
        .pipeline({ circuitBreaker: 'slow' })
        .execute((signal) => {
          seen.push(signal);
          return 'ok';
        });
      expect(seen[0]).toBeInstanceOf(AbortSignal);
      expect(seen[0].aborted).toBe(false);
    });
  });

  describe('a caller that has already cancelled runs nothing', () => {
    const paths: [
      string,
      (r: ResilienceRegistry, fn: () => Promise<string>, signal: AbortSignal) => Promise<string>,
    ][] = [
      ['retry', (r, fn, signal) => r.retry('slow').execute(fn, { signal })],
      ['circuit breaker', (r, fn, signal) => r.circuitBreaker('slow').execute(fn, { signal })],
      ['time limiter', (r, fn, signal) => r.timeLimiter('slow').execute(fn, { signal })],
      ['bulkhead', (r, fn, signal) => r.bulkhead('slow').execute(fn, { signal })],
      ['rate limiter', (r, fn, signal) => r.rateLimiter('slow').execute(fn, { signal })],
      [
        'pipeline',
        (r, fn, signal) =>
          r.pipeline({ retry: 'slow', circuitBreaker: 'slow', timeLimiter: 'slow', bulkhead: 'slow' }).execute(fn, {
            signal,
          }),
      ],
    ];

    it.each(paths)(
      '%s: the function is not called and the call rejects with an AbortError caused by the reason',
      async (_, run) => {
        const clock = new VirtualClock();
        const r = registry(clock);
        const controller = new AbortController();
        const reason = new Error('user navigated away');
        controller.abort(reason);
        let calls = 0;
        const error = await run(r, () => Promise.resolve(`call ${++calls}`), controller.signal).catch(
          (e: unknown) => e,
        );
        expect(calls).toBe(0);
        expect(error).toMatchObject({ name: 'AbortError', cause: reason });
        expect(r.circuitBreaker('slow').metrics.numberOfBufferedCalls).toBe(0);
        expect(r.bulkhead('slow').metrics.availableConcurrentCalls).toBe(1);
      },
    );

    it('inside a request scope that has been aborted, a decorated-style pipeline call runs nothing', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const request = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      const reason = new DOMException('the client went away', 'AbortError');
      request.abort(reason);
      let calls = 0;
      const error = await contextStorage
        .run(request, () => r.pipeline({ circuitBreaker: 'slow', bulkhead: 'slow' }).execute(() => `call ${++calls}`))
        .catch((e: unknown) => e);
      expect(calls).toBe(0);
      expect(error).toMatchObject({ name: 'AbortError', cause: reason });
    });
  });

  describe('a caller that cancels during the call', () => {
    it('a slow attempt settles at once, its signal aborted, the breaker records nothing and the bulkhead permit is back', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const controller = new AbortController();
      const seen: AbortSignal[] = [];
      const call = track(
        clock,
        r
          .pipeline({ circuitBreaker: 'slow', bulkhead: 'slow' })
          .execute(answerAfter(clock, 5000, seen), { signal: controller.signal }),
      );
      await clock.advance(500);
      expect(r.bulkhead('slow').metrics.availableConcurrentCalls).toBe(0);
      const reason = new Error('stop');
      controller.abort(reason);
      await clock.advance(0);
      expect(call.status).toBe('rejected');
      expect(call.error).toMatchObject({ name: 'AbortError', cause: reason });
      expect(seen[0].aborted).toBe(true);
      expect(r.circuitBreaker('slow').metrics.numberOfBufferedCalls).toBe(0);
      expect(r.circuitBreaker('slow').state).toBe('CLOSED');
      expect(r.bulkhead('slow').metrics.availableConcurrentCalls).toBe(1);
    });

    it.each(['pipeline', 'rate limiter alone'])(
      '%s: a slow attempt whose caller cancels gives its rate-limiter permit back',
      async (path) => {
        const clock = new VirtualClock();
        const r = new ResilienceRegistry({
          clock,
          rateLimiter: { instances: { slow: { limitForPeriod: 2, limitRefreshPeriod: '1h', timeoutDuration: 0 } } },
        });
        const limiter = r.rateLimiter('slow');
        const controller = new AbortController();
        const fn = answerAfter(clock, 5000);
        const call = track(
          clock,
          path === 'pipeline'
            ? r.pipeline({ rateLimiter: 'slow', circuitBreaker: 'slow' }).execute(fn, { signal: controller.signal })
            : limiter.execute(fn, { signal: controller.signal }),
        );
        await clock.advance(100);
        expect(limiter.metrics.availablePermissions).toBe(1);
        controller.abort('gone');
        await clock.advance(0);
        expect(call.error).toMatchObject({ name: 'AbortError', cause: 'gone' });
        expect(limiter.metrics.availablePermissions).toBe(2);
      },
    );

    it('a method that ignores its signal: the call still settles at once and its late answer is discarded', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const controller = new AbortController();
      const call = track(
        clock,
        r
          .timeLimiter('slow')
          .execute(() => new Promise<string>((resolve) => clock.setTimeout(() => resolve('late'), 800)), {
            signal: controller.signal,
          }),
      );
      await clock.advance(100);
      controller.abort('gone');
      await clock.advance(0);
      expect(call.error).toMatchObject({ name: 'AbortError', cause: 'gone' });
      await clock.advance(1000);
      expect(call.value).toBeUndefined();
    });

    it('a cancelled retry rejects with the last error of the method, during its backoff', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const controller = new AbortController();
      const failure = new Unavailable('inventory answered 503');
      let calls = 0;
      const call = track(
        clock,
        r.retry('slow').execute(
          () => {
            calls++;
            return Promise.reject(failure);
          },
          { signal: controller.signal },
        ),
      );
      // Full jitter at 0.5 of the 1 s bound: the retry waits 500 ms.
      await clock.advance(100);
      expect(calls).toBe(1);
      controller.abort(new Error('stop'));
      await clock.advance(0);
      expect(call.error).toBe(failure);
      await clock.advance(5000);
      expect(calls).toBe(1);
      expect(r.retry('slow').metrics.failedCallsWithoutRetry + r.retry('slow').metrics.failedCallsWithRetry).toBe(1);
    });

    it('a cancelled retry rejects with the last error of the method, during a later attempt that ends with the AbortError', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const controller = new AbortController();
      const failure = new Unavailable('inventory answered 503');
      let calls = 0;
      const call = track(
        clock,
        r.retry('slow').execute(
          (signal) => {
            calls++;
            return calls === 1 ? Promise.reject(failure) : answerAfter(clock, 5000)(signal);
          },
          { signal: controller.signal },
        ),
      );
      await clock.advance(1500);
      expect(calls).toBe(2);
      controller.abort(new Error('stop'));
      await clock.advance(0);
      expect(call.error).toBe(failure);
      await clock.advance(10000);
      expect(calls).toBe(2);
    });

    it('the fused pipeline: cancelled during the second attempt, it rejects with the first error and records no failure for the abort', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const controller = new AbortController();
      const failure = new Unavailable('inventory answered 503');
      let calls = 0;
      const call = track(
        clock,
        r.pipeline({ retry: 'slow', circuitBreaker: 'slow', timeLimiter: 'slow' }).execute(
          (signal) => {
            calls++;
            return calls === 1 ? Promise.reject(failure) : answerAfter(clock, 900)(signal);
          },
          { signal: controller.signal },
        ),
      );
      await clock.advance(1200);
      expect(calls).toBe(2);
      controller.abort(new Error('stop'));
      await clock.advance(0);
      expect(call.error).toBe(failure);
      // One failure (the 503), nothing for the cancelled second attempt.
      expect(r.circuitBreaker('slow').metrics.numberOfFailedCalls).toBe(1);
      expect(r.circuitBreaker('slow').metrics.numberOfBufferedCalls).toBe(1);
      await clock.advance(10000);
      expect(calls).toBe(2);
    });

    it('the caller’s own AbortError from the method is no failure for the breaker and is not retried', async () => {
      const clock = new VirtualClock();
      const r = registry(clock);
      const request = new ResilienceContext(clock, Number.POSITIVE_INFINITY);
      let calls = 0;
      const call = track(
        clock,
        contextStorage.run(request, () =>
          r.pipeline({ retry: 'slow', circuitBreaker: 'slow' }).execute((signal) => {
            calls++;
            return answerAfter(clock, 5000)(signal);
          }),
        ),
      );
      await clock.advance(100);
      request.abort(new DOMException('client left', 'AbortError'));
      await clock.advance(10000);
      expect(calls).toBe(1);
      expect(call.error).toMatchObject({ name: 'AbortError' });
      expect(r.circuitBreaker('slow').metrics.numberOfBufferedCalls).toBe(0);
    });
  });
});
