import { VirtualClock } from '../clock';
import { contextStorage, currentContext, ResilienceContext } from '../context';
import { DeadlineExceededError, TimeoutExceededError } from '../errors';
import { AttemptObserver, TimeLimiter } from './time-limiter';

/** An observer that records what the limiter tells it, as the fused pipeline's attempt does. */
class RecordingObserver implements AttemptObserver<string> {
  readonly seen: string[] = [];
  /** The request scope each rejection was handled in. */
  readonly contexts: Array<ResilienceContext | undefined> = [];

  calleeSettled(): void {
    this.seen.push('calleeSettled');
  }
  fulfilled(value: string): unknown {
    this.seen.push(`fulfilled ${value}`);
    return value;
  }
  rejected(error: unknown): unknown {
    this.seen.push(`rejected ${(error as Error).constructor.name}`);
    this.contexts.push(currentContext());
    throw error;
  }
}

describe('TimeLimiter with an attempt observer', () => {
  const config = { timeoutDuration: 500, cancelRunningFuture: true };

  it('tells the observer the callee is done before rejecting a call whose deadline has passed', async () => {
    const clock = new VirtualClock();
    const limiter = new TimeLimiter('tl', config, clock);
    const observer = new RecordingObserver();
    const request = new ResilienceContext(clock, clock.now() + 50);
    await clock.advance(50);
    let called = false;

    const outcome = contextStorage.run(request, () =>
      limiter.call(() => ((called = true), 'value'), undefined, observer),
    );

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
      limiter.call(() => new Promise<string>(() => undefined), undefined, observer),
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

    const outcome = limiter.call(() => new Promise<string>(() => undefined), undefined, observer);
    outcome.catch(() => undefined);
    // The timer fires inside an unrelated request's scope, as a shared timer armed by another call would.
    await contextStorage.run(unrelated, () => clock.advance(500));

    await expect(outcome).rejects.toBeInstanceOf(TimeoutExceededError);
    expect(observer.contexts).toEqual([undefined]);
  });
});
