import { VirtualClock } from '../kernel/clock';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { recordEvents } from './event-recorder';

class Unavailable extends Error {
  readonly status = 503;
}

describe('recordEvents', () => {
  it('records every event in order, of instances made before and after, fallbacks and faults included', async () => {
    const clock = new VirtualClock();
    const registry = new ResilienceRegistry({
      clock,
      circuitBreaker: { instances: { psp: { minimumNumberOfCalls: 2, slidingWindowSize: 2 } } },
      faultInjection: { enabled: true },
    });
    const recorder = recordEvents(registry);
    const pipeline = registry.pipeline({
      name: 'charge',
      circuitBreaker: 'psp',
      fallback: { errors: Unavailable, handler: () => 'later' },
    });
    registry.faults.inject('psp', { error: { rate: 1, error: 503 } });
    await pipeline.execute(() => 'charged').catch(() => undefined);
    await clock.advance(5);
    registry.faults.clear();
    await pipeline.execute(() => Promise.reject(new Unavailable('down')));
    // The injected 503 is no Unavailable, so only the second call falls back.
    expect(recorder.lines()).toEqual([
      'faults psp FAULT_INJECTED',
      'circuitBreaker psp ERROR',
      'circuitBreaker psp ERROR',
      'circuitBreaker psp FAILURE_RATE_EXCEEDED',
      'circuitBreaker psp STATE_TRANSITION CLOSED_TO_OPEN',
      'fallback charge FALLBACK',
    ]);
    expect(recorder.events[1]).toMatchObject({ policy: 'circuitBreaker', name: 'psp', type: 'ERROR', at: 0 });
    recorder.clear();
    expect(recorder.events).toEqual([]);
    registry.retry('made-later');
    recorder.stop();
    await pipeline.execute(() => 'charged').catch(() => undefined);
    expect(recorder.events).toEqual([]);
  });
});
