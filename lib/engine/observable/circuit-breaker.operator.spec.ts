import { Observable, Subject, lastValueFrom, of, take, throwError, toArray } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { CallNotPermittedError } from '../../kernel/errors';
import { CircuitBreakerPolicy } from '../../policies/circuit-breaker/circuit-breaker.policy';
import { CIRCUIT_BREAKER_SCHEMA, CircuitBreakerConfig } from '../../policies/circuit-breaker/circuit-breaker.config';

class IoError extends Error {}
class NotFound extends Error {
  readonly status = 404;
}

function setup(overrides: Partial<CircuitBreakerConfig> = {}): { clock: VirtualClock; cb: CircuitBreakerPolicy } {
  const clock = new VirtualClock();
  const settings = { ...CIRCUIT_BREAKER_SCHEMA.defaults, slidingWindowSize: 4, minimumNumberOfCalls: 4, ...overrides };
  return { clock, cb: new CircuitBreakerPolicy('quotes', settings, clock) };
}

/** What the breaker recorded, in order: `success <ms>` or `error <ms>`. */
function recorded(cb: CircuitBreakerPolicy): string[] {
  const log: string[] = [];
  cb.onSuccess((e) => log.push(`success ${e.durationMs}`));
  cb.onError((e) => log.push(`error ${e.durationMs}`));
  cb.onIgnoredError((e) => log.push(`ignored ${e.durationMs}`));
  return log;
}

describe('CircuitBreakerPolicy.observe: each subscription is one call', () => {
  it('refuses a subscription with CallNotPermittedError, never subscribing upstream', async () => {
    const { cb } = setup();
    cb.transitionToForcedOpenState();
    let subscribed = 0;
    const source = new Observable<number>(() => {
      subscribed++;
    });
    await expect(lastValueFrom(cb.observe(source))).rejects.toMatchObject({
      constructor: CallNotPermittedError,
      state: 'FORCED_OPEN',
    });
    expect(subscribed).toBe(0);
    expect(cb.metrics.numberOfNotPermittedCalls).toBe(1);
  });

  it('passes every value on and records one success, timed from subscribe to the first value', async () => {
    const { cb, clock } = setup();
    const log = recorded(cb);
    const source = new Subject<string>();
    const seen: string[] = [];
    let completed = false;
    cb.observe(source).subscribe({ next: (v) => seen.push(v), complete: () => (completed = true) });
    await clock.advance(30);
    source.next('a');
    await clock.advance(500);
    source.next('b');
    source.complete();

    expect(seen).toEqual(['a', 'b']);
    expect(completed).toBe(true);
    expect(log).toEqual(['success 30']);
    expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 1, numberOfFailedCalls: 0 });
  });

  it('records a completion without values as a success timed to its end', async () => {
    const { cb, clock } = setup();
    const log = recorded(cb);
    const source = new Subject<string>();
    cb.observe(source).subscribe();
    await clock.advance(70);
    source.complete();
    expect(log).toEqual(['success 70']);
  });

  it('classifies an error as a call would, and passes it on', async () => {
    const { cb, clock } = setup({ ignoreExceptions: [RangeError] });
    const log = recorded(cb);
    const errors: unknown[] = [];
    for (const error of [new IoError('down'), new NotFound('gone'), new RangeError('ignored')]) {
      const source = new Subject<string>();
      cb.observe(source).subscribe({ error: (e: unknown) => errors.push(e) });
      await clock.advance(20);
      source.next('partial');
      await clock.advance(5);
      source.error(error);
    }
    expect(errors.map((e) => (e as Error).message)).toEqual(['down', 'gone', 'ignored']);
    expect(log).toEqual(['error 20', 'success 20', 'ignored 20']);
    expect(cb.metrics).toMatchObject({ numberOfBufferedCalls: 2, numberOfFailedCalls: 1 });
  });

  it('times an error with no value before it to the error', async () => {
    const { cb, clock } = setup();
    const log = recorded(cb);
    const source = new Subject<string>();
    cb.observe(source).subscribe({ error: () => undefined });
    await clock.advance(45);
    source.error(new IoError('late'));
    expect(log).toEqual(['error 45']);
  });

  it('records an unsubscribe after a value as a success, and stops the upstream', async () => {
    const { cb, clock } = setup();
    const log = recorded(cb);
    let upstreamClosed = false;
    const source = new Observable<number>((subscriber) => {
      clock.setTimeout(() => subscriber.next(1), 15);
      return () => (upstreamClosed = true);
    });
    const subscription = cb.observe(source).subscribe();
    await clock.advance(40);
    subscription.unsubscribe();
    subscription.unsubscribe();
    expect(upstreamClosed).toBe(true);
    expect(log).toEqual(['success 15']);
  });

  it('records nothing for an unsubscribe before any value, and gives a half-open permit back', async () => {
    const { cb } = setup({ permittedNumberOfCallsInHalfOpenState: 1 });
    const log = recorded(cb);
    cb.transitionToOpenState();
    cb.transitionToHalfOpenState();
    let upstreamClosed = false;
    const silent = new Observable<number>(() => () => (upstreamClosed = true));
    cb.observe(silent).subscribe().unsubscribe();
    expect(upstreamClosed).toBe(true);
    expect(log).toEqual([]);
    // The one trial permit is free again.
    await expect(lastValueFrom(cb.observe(of(1)))).resolves.toBe(1);
    expect(cb.state).toBe('CLOSED');
  });

  it('records a synchronous source once, even when the subscriber stops after its first value', async () => {
    const { cb } = setup();
    const log = recorded(cb);
    await expect(lastValueFrom(cb.observe(of(1, 2, 3)).pipe(take(1), toArray()))).resolves.toEqual([1]);
    await expect(lastValueFrom(cb.observe(throwError(() => new IoError('sync'))))).rejects.toThrow('sync');
    expect(log).toEqual(['success 0', 'error 0']);
  });

  it('does not count a subscription admitted before a transition in the new state', async () => {
    const { cb } = setup();
    const source = new Subject<string>();
    cb.observe(source).subscribe({ error: () => undefined });
    cb.transitionToOpenState();
    cb.transitionToHalfOpenState();
    source.error(new IoError('stale'));
    expect(cb.state).toBe('HALF_OPEN');
    expect(cb.metrics.numberOfBufferedCalls).toBe(0);
  });
});
