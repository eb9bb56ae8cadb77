import { VirtualClock } from '../kernel/clock';
import { TimeoutExceededError } from '../kernel/errors';
import { ResilienceRegistry } from '../registry/resilience.registry';
import { StandardPipeline } from './standard-pipeline';

type Call = () => Promise<unknown>;

/** A fused pipeline with a 500 ms time limit and a breaker; each call's argument says what the method does. */
function build() {
  const clock = new VirtualClock();
  const registry = new ResilienceRegistry({
    clock,
    circuitBreaker: { instances: { cb: { slidingWindowSize: 100, minimumNumberOfCalls: 100 } } },
    timeLimiter: { instances: { tl: { timeoutDuration: 500 } } },
  });
  const breaker = registry.circuitBreaker('cb');
  const pipeline = new StandardPipeline(
    { circuitBreaker: breaker, timeLimiter: registry.timeLimiter('tl') },
    (args) => (args[0] as Call)(),
    clock,
  );
  /** Starts a call; its outcome and the virtual time it settled at. */
  const start = (method: Call) => {
    const seen: { value?: unknown; error?: unknown; at?: number } = {};
    const outcome = pipeline.run([method]).then(
      (value) => Object.assign(seen, { value, at: clock.now() }),
      (error: unknown) => Object.assign(seen, { error, at: clock.now() }),
    );
    return { seen, outcome };
  };
  return { clock, breaker, pipeline, start };
}

/** A method that answers when told to. */
function deferred(): { method: Call; answer: (value: unknown) => void } {
  let answer!: (value: unknown) => void;
  const promise = new Promise((resolve) => (answer = resolve));
  return { method: () => promise, answer };
}

describe('StandardPipeline reuses its attempt objects only once their calls are over', () => {
  it('gives a finished attempt to the next call: sequential calls make no attempt of their own', async () => {
    const { pipeline, start } = build();
    await start(async () => 'first').outcome;
    expect(pipeline.spare).toHaveLength(1);
    const reused = pipeline.spare[0];

    const second = start(async () => 'second');
    expect(pipeline.spare).toHaveLength(0);
    await second.outcome;

    expect(second.seen.value).toBe('second');
    expect(pipeline.spare).toEqual([reused]);
  });

  it('keeps an answered attempt out of reuse while an earlier one holds the time limiter queue, and each call still expires at its own limit', async () => {
    const { clock, pipeline, start } = build();
    const first = start(() => new Promise(() => undefined));
    await clock.advance(10);
    const second = start(async () => 'second');
    await second.outcome;
    // The first attempt is still at the front of the queue, so the second stays queued behind it.
    expect(second.seen).toEqual({ value: 'second', at: 10 });
    expect(pipeline.spare).toHaveLength(0);

    await clock.advance(10);
    const third = start(() => new Promise(() => undefined));
    await clock.advance(479);
    expect(first.seen.at).toBeUndefined();

    await clock.advance(1);
    expect(first.seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(first.seen.at).toBe(500);
    // The queue let go of the second attempt with the first: only now may a call reuse it.
    expect(pipeline.spare).toHaveLength(1);

    await clock.advance(19);
    expect(third.seen.at).toBeUndefined();
    await clock.advance(1);
    expect(third.seen.error).toBeInstanceOf(TimeoutExceededError);
    expect(third.seen.at).toBe(520);
  });

  it('reuses a timed-out attempt only after its method settles, and the late answer reaches no later call', async () => {
    const { clock, breaker, pipeline, start } = build();
    const slow = deferred();
    const first = start(slow.method);
    await clock.advance(500);
    expect(first.seen.error).toBeInstanceOf(TimeoutExceededError);
    // Timed out, but its method is still running: the attempt is not free.
    expect(pipeline.spare).toHaveLength(0);

    const next = deferred();
    const second = start(next.method);
    slow.answer('late');
    await clock.advance(0);
    expect(pipeline.spare).toHaveLength(1);
    expect(second.seen).toEqual({});

    next.answer('second');
    await second.outcome;
    expect(second.seen).toEqual({ value: 'second', at: 500 });
    expect(breaker.metrics.numberOfSuccessfulCalls).toBe(1);
    expect(breaker.metrics.numberOfFailedCalls).toBe(1);
  });

  it('keeps at most 64 spare attempts after a burst', async () => {
    const { pipeline, start } = build();
    const burst = Array.from({ length: 100 }, (_, i) => start(async () => i));
    await Promise.all(burst.map((call) => call.outcome));

    expect(burst.map((call) => call.seen.value)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(pipeline.spare).toHaveLength(64);
  });
});
