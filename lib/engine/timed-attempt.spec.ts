import { VirtualClock } from '../kernel/clock';
import { contextStorage, currentContext, policyScope, ResilienceContext } from '../kernel/context';
import { DeadlineExceededError, TimeoutExceededError } from '../kernel/errors';
import { TimeLimiter } from '../policies/time-limiter/time-limiter.policy';
import { TimedAttempt } from './timed-attempt';

/** An attempt that records what the limiter tells it, as the fused pipeline's attempt does. */
class RecordingObserver extends TimedAttempt {
  readonly seen: string[] = [];
  /** The request scope each rejection was handled in. */
  readonly contexts: Array<ResilienceContext | undefined> = [];

  override calleeSettled(): void {
    this.seen.push('calleeSettled');
  }
  override fulfilled(value: unknown): unknown {
    this.seen.push(`fulfilled ${String(value)}`);
    return value;
  }
  override rejected(error: unknown): unknown {
    this.seen.push(`rejected ${(error as Error).constructor.name}`);
    this.contexts.push(currentContext());
    throw error;
  }
}

/** Starts `next` as `attempt` under `limiter` now, in the current scope, as the engine does. */
function start<R>(limiter: TimeLimiter, next: () => R | PromiseLike<R>, attempt: TimedAttempt): Promise<unknown> {
  return limiter.begin(next, undefined, attempt, limiter.clock.now(), policyScope());
}

describe('TimedAttempt: an attempt under a time limiter, told what happened', () => {
  const config = { timeoutDuration: 500, cancelRunningFuture: true };

  it('tells the observer the callee is done before rejecting a call whose deadline has passed', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);
    const observer = new RecordingObserver();
    const request = new ResilienceContext(clock, clock.now() + 50);
    await clock.advance(50);
    let called = false;

    const outcome = contextStorage.run(request, () => start(limiter, () => ((called = true), 'value'), observer));

    await expect(outcome).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(called).toBe(false);
    expect(observer.seen).toEqual(['calleeSettled', 'rejected DeadlineExceededError']);
  });

  it('hands a timeout to the observer in the caller’s request scope, not the timer’s', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);
    const observer = new RecordingObserver();
    const request = new ResilienceContext(clock, clock.now() + 10_000);

    const outcome = contextStorage.run(request, () =>
      start(limiter, () => new Promise<string>(() => undefined), observer),
    );
    outcome.catch(() => undefined);
    await clock.advance(500);

    await expect(outcome).rejects.toBeInstanceOf(TimeoutExceededError);
    expect(observer.seen).toEqual(['rejected TimeoutExceededError']);
    expect(observer.contexts).toEqual([request]);
  });

  it('hands a timeout to the observer outside any scope when the caller had none', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);
    const observer = new RecordingObserver();
    const unrelated = new ResilienceContext(clock, clock.now() + 10_000);

    const outcome = start(limiter, () => new Promise<string>(() => undefined), observer);
    outcome.catch(() => undefined);
    // The timer fires inside an unrelated request's scope, as a shared timer armed by another call would.
    await contextStorage.run(unrelated, () => clock.advance(500));

    await expect(outcome).rejects.toBeInstanceOf(TimeoutExceededError);
    expect(observer.contexts).toEqual([undefined]);
  });
});

/** An attempt that maps every outcome to a value, as a fallback would. */
class MappingObserver extends TimedAttempt {
  readonly seen: string[] = [];

  override calleeSettled(): void {
    this.seen.push('calleeSettled');
  }
  override fulfilled(value: unknown): unknown {
    this.seen.push(`fulfilled ${String(value)}`);
    if (value === 'bad') throw new Error(`mapped ${String(value)}`);
    return `mapped ${String(value)}`;
  }
  override rejected(error: unknown): unknown {
    this.seen.push(`rejected ${(error as Error).constructor.name}`);
    return `recovered from ${(error as Error).constructor.name}`;
  }
}

describe('TimeLimiter with an observer that maps outcomes', () => {
  const config = { timeoutDuration: 500, cancelRunningFuture: true };

  it('resolves with what the observer makes of a value, a failure, a timeout and a refusal', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);

    const valueObserver = new MappingObserver();
    await expect(start(limiter, async () => 'v', valueObserver)).resolves.toBe('mapped v');
    expect(valueObserver.seen).toEqual(['calleeSettled', 'fulfilled v']);

    const failureObserver = new MappingObserver();
    const failing = start(limiter, () => Promise.reject(new RangeError('x')), failureObserver);
    await expect(failing).resolves.toBe('recovered from RangeError');
    expect(failureObserver.seen).toEqual(['calleeSettled', 'rejected RangeError']);

    const timeoutObserver = new MappingObserver();
    let finish!: (value: string) => void;
    const slow = start(limiter, () => new Promise<string>((resolve) => (finish = resolve)), timeoutObserver);
    await clock.advance(500);
    await expect(slow).resolves.toBe('recovered from TimeoutExceededError');
    expect(timeoutObserver.seen).toEqual(['rejected TimeoutExceededError']);
    finish('late');
    await VirtualClock.settle();
    expect(timeoutObserver.seen).toEqual(['rejected TimeoutExceededError', 'calleeSettled']);

    const refusedObserver = new MappingObserver();
    const request = new ResilienceContext(clock, clock.now());
    const refused = contextStorage.run(request, () => start(limiter, async () => 'never', refusedObserver));
    await expect(refused).resolves.toBe('recovered from DeadlineExceededError');
    expect(refusedObserver.seen).toEqual(['calleeSettled', 'rejected DeadlineExceededError']);
  });

  it('rejects with the error the observer throws for a value', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);
    const observer = new MappingObserver();
    await expect(start(limiter, async () => 'bad', observer)).rejects.toThrow('mapped bad');
  });
});
