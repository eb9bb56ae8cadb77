import { BulkheadPolicy } from '../policies/bulkhead/bulkhead.policy';
import { CircuitBreakerPolicy } from '../policies/circuit-breaker/circuit-breaker.policy';
import { CIRCUIT_BREAKER_SCHEMA } from '../policies/circuit-breaker/circuit-breaker.config';
import { VirtualClock } from '../kernel/clock';
import { EventJournal } from './event-journal';

describe('EventJournal', () => {
  it('keeps the last N events of each instance and merges instances oldest first', async () => {
    const clock = new VirtualClock();
    const journal = new EventJournal(2);
    const config = { ...CIRCUIT_BREAKER_SCHEMA.defaults, slidingWindowSize: 1, minimumNumberOfCalls: 1 };
    const a = new CircuitBreakerPolicy('a', config, clock);
    const b = new CircuitBreakerPolicy('b', config, clock);
    const stop = [
      ...journal.record({ policy: 'circuitBreaker', name: 'a', instance: a, derived: false }),
      ...journal.record({ policy: 'circuitBreaker', name: 'b', instance: b, derived: false }),
    ];
    await a.execute(() => 'ok');
    await b.execute(() => 'ok');
    await a.execute(() => Promise.reject(new TypeError('boom'))).catch(() => undefined);
    const events = journal.events('circuitBreaker');
    expect(events.map((e) => `${e.name}:${e.type}`)).toEqual([
      'b:SUCCESS',
      'a:FAILURE_RATE_EXCEEDED',
      'a:STATE_TRANSITION',
    ]);
    expect(journal.events('circuitBreaker', 'a')[1]).toMatchObject({ stateTransition: 'CLOSED_TO_OPEN' });
    expect(journal.events('bulkhead')).toEqual([]);
    for (const unsubscribe of stop) unsubscribe();
    await b.execute(() => 'ok');
    expect(journal.events('circuitBreaker', 'b')).toHaveLength(1);
  });

  it('renders errors as class and message when asked to, and leaves out what an event does not carry', async () => {
    const clock = new VirtualClock();
    const journal = new EventJournal(10, true);
    const bulkhead = new BulkheadPolicy('pool', { maxConcurrentCalls: 1, maxWaitDuration: 0 }, clock);
    journal.record({ policy: 'bulkhead', name: 'pool', instance: bulkhead, derived: false });
    let release!: () => void;
    const held = bulkhead.execute(() => new Promise<void>((resolve) => (release = resolve)));
    await bulkhead.execute(() => undefined).catch(() => undefined);
    release();
    await held;
    const [permitted, rejected, finished] = journal.events('bulkhead');
    expect(JSON.parse(JSON.stringify(permitted))).toEqual({
      name: 'pool',
      type: 'CALL_PERMITTED',
      creationTime: permitted.creationTime,
    });
    expect(rejected).toMatchObject({
      type: 'CALL_REJECTED',
      reason: 'queue-full',
      errorClass: 'BulkheadFullError',
      errorMessage: "BulkheadFullError: Bulkhead 'pool' is full and does not permit further calls (queue-full)",
    });
    expect(finished).toMatchObject({ type: 'CALL_FINISHED', durationMs: 0 });
  });
});
