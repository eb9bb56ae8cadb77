import fc from 'fast-check';
import { VirtualClock } from '../../kernel/clock';
import { BulkheadFullError, TimeoutExceededError } from '../../kernel/errors';
import { CircuitBreakerPolicy } from './circuit-breaker.policy';
import type { CircuitBreakerState } from './circuit-breaker.events';
import { CIRCUIT_BREAKER_SCHEMA, CircuitBreakerConfig } from './circuit-breaker.config';
import { IllegalStateTransitionError } from './illegal-state-transition.error';

/*
 * Model-based test: random operations run against the real breaker and
 * against a deliberately naive reference model (plain arrays, filtered on
 * every read) written from the specification. After every operation the two
 * must agree on the state, the window's numbers, and every permit decision.
 */

type ModelSettings = Pick<
  CircuitBreakerConfig,
  | 'slidingWindowType'
  | 'slidingWindowSize'
  | 'minimumNumberOfCalls'
  | 'failureRateThreshold'
  | 'slowCallRateThreshold'
  | 'slowCallDurationThreshold'
  | 'waitDurationInOpenState'
  | 'permittedNumberOfCallsInHalfOpenState'
  | 'maxWaitDurationInHalfOpenState'
  | 'transitionToStateAfterWaitDuration'
  | 'automaticTransitionFromOpenToHalfOpenEnabled'
  | 'enableExponentialBackoff'
  | 'exponentialMaxWaitDurationInOpenState'
>;

/** The model doubles the open wait: with an integer base the doubling needs no truncation. */
const MULTIPLIER = 2;

/** How a call ends: `clientError` is an HTTP 404 (a success), `ignored` a BulkheadFullError, `timeout` a failure. */
type Ending = 'success' | 'failure' | 'timeout' | 'clientError' | 'ignored';

type Manual = 'forceOpen' | 'disable' | 'metricsOnly' | 'close' | 'open' | 'halfOpen' | 'reset';

type Op =
  | { kind: 'start'; ending: Ending }
  | { kind: 'complete'; index: number }
  | { kind: 'call'; ending: Ending; durationMs: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'manual'; action: Manual };

interface Entry {
  at: number;
  failed: boolean;
  slow: boolean;
}

interface ModelWindow {
  entries: Entry[];
  /** Calls for COUNT_BASED, seconds for TIME_BASED. */
  size: number;
  timeBased: boolean;
  minimum: number;
}

interface ModelCall {
  incarnation: number;
  startedAt: number;
  ending: Ending;
}

class ReferenceModel {
  state: CircuitBreakerState = 'CLOSED';
  now = 0;
  notPermitted = 0;
  private incarnation = 0;
  private window: ModelWindow | null;
  private openUntil = 0;
  private halfOpenUntil = Infinity;
  private permits = 0;
  private opened = 0;

  constructor(private readonly s: ModelSettings) {
    this.window = this.closedWindow();
  }

  start(ending: Ending): ModelCall | undefined {
    if (this.state === 'OPEN' && this.now > this.openUntil) this.moveTo('HALF_OPEN');
    let permitted: boolean;
    if (this.state === 'HALF_OPEN') {
      permitted = this.permits > 0;
      if (permitted) this.permits -= 1;
    } else {
      permitted = this.state !== 'OPEN' && this.state !== 'FORCED_OPEN';
    }
    if (!permitted) {
      this.notPermitted += 1;
      return undefined;
    }
    return { incarnation: this.incarnation, startedAt: this.now, ending };
  }

  complete(call: ModelCall): void {
    if (this.state === 'DISABLED' || call.incarnation !== this.incarnation) return;
    if (call.ending === 'ignored') {
      if (this.state === 'HALF_OPEN')
        this.permits = Math.min(this.permits + 1, this.s.permittedNumberOfCallsInHalfOpenState);
      return;
    }
    const window = this.window;
    if (window === null) return;
    const failed = call.ending === 'failure' || call.ending === 'timeout';
    window.entries.push({ at: this.now, failed, slow: this.now - call.startedAt > this.s.slowCallDurationThreshold });
    if (!window.timeBased && window.entries.length > window.size) window.entries.shift();
    const { calls, failureRate, slowCallRate } = this.rates();
    if (calls < window.minimum) return;
    const exceeded = failureRate >= this.s.failureRateThreshold || slowCallRate >= this.s.slowCallRateThreshold;
    if (this.state === 'CLOSED' && exceeded) this.moveTo('OPEN');
    else if (this.state === 'HALF_OPEN') this.moveTo(exceeded ? 'OPEN' : 'CLOSED');
  }

  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let due = Infinity;
      if (this.state === 'OPEN' && this.s.automaticTransitionFromOpenToHalfOpenEnabled) due = this.openUntil;
      if (this.state === 'HALF_OPEN') due = this.halfOpenUntil;
      if (due > target) break;
      this.now = due;
      this.moveTo(this.state === 'OPEN' ? 'HALF_OPEN' : this.s.transitionToStateAfterWaitDuration);
    }
    this.now = target;
  }

  /** Applies a manual action; false when the state machine forbids it (and nothing changed). */
  manual(action: Manual): boolean {
    const targets: Record<Exclude<Manual, 'reset'>, CircuitBreakerState> = {
      forceOpen: 'FORCED_OPEN',
      disable: 'DISABLED',
      metricsOnly: 'METRICS_ONLY',
      close: 'CLOSED',
      open: 'OPEN',
      halfOpen: 'HALF_OPEN',
    };
    if (action === 'reset') {
      this.moveTo('CLOSED');
      return true;
    }
    const to = targets[action];
    const forbidden =
      to === 'HALF_OPEN'
        ? this.state === 'CLOSED' || this.state === 'METRICS_ONLY'
        : to === 'OPEN' && this.state === 'METRICS_ONLY';
    if (forbidden) return false;
    this.moveTo(to);
    return true;
  }

  rates(): { calls: number; failed: number; slow: number; failureRate: number; slowCallRate: number } {
    const entries = this.liveEntries();
    const calls = entries.length;
    const failed = entries.filter((e) => e.failed).length;
    const slow = entries.filter((e) => e.slow).length;
    const rated = calls > 0 && calls >= (this.window?.minimum ?? Infinity);
    return {
      calls,
      failed,
      slow,
      failureRate: rated ? (failed * 100) / calls : -1,
      slowCallRate: rated ? (slow * 100) / calls : -1,
    };
  }

  private liveEntries(): Entry[] {
    const window = this.window;
    if (window === null) return [];
    if (!window.timeBased) return window.entries;
    const oldestSecond = Math.floor(this.now / 1000) - window.size + 1;
    return window.entries.filter((e) => Math.floor(e.at / 1000) >= oldestSecond);
  }

  private closedWindow(): ModelWindow {
    const timeBased = this.s.slidingWindowType === 'TIME_BASED';
    const size = this.s.slidingWindowSize;
    const minimum = timeBased ? this.s.minimumNumberOfCalls : Math.min(this.s.minimumNumberOfCalls, size);
    return { entries: [], size, timeBased, minimum };
  }

  private moveTo(state: CircuitBreakerState): void {
    this.incarnation += 1;
    this.state = state;
    if (state !== 'OPEN') this.notPermitted = 0;
    if (state === 'CLOSED' || state === 'METRICS_ONLY') this.window = this.closedWindow();
    if (state === 'DISABLED' || state === 'FORCED_OPEN') this.window = null;
    if (state === 'OPEN' || state === 'FORCED_OPEN') this.opened += 1;
    else if (state !== 'HALF_OPEN') this.opened = 0;
    if (state === 'OPEN') {
      const grown = this.s.waitDurationInOpenState * MULTIPLIER ** (this.opened - 1);
      const wait = this.s.enableExponentialBackoff
        ? Math.min(grown, this.s.exponentialMaxWaitDurationInOpenState)
        : this.s.waitDurationInOpenState;
      this.openUntil = this.now + wait;
    }
    if (state === 'HALF_OPEN') {
      const permitted = this.s.permittedNumberOfCallsInHalfOpenState;
      const minimum = Math.min(this.s.minimumNumberOfCalls, permitted);
      this.window = { entries: [], size: permitted, timeBased: false, minimum };
      this.permits = permitted;
      const maxWait = this.s.maxWaitDurationInHalfOpenState;
      this.halfOpenUntil = maxWait > 0 ? this.now + maxWait : Infinity;
    }
  }
}

class StatusError extends Error {
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}

function errorFor(ending: Ending): unknown {
  switch (ending) {
    case 'failure':
      return new Error('down');
    case 'timeout':
      return new TimeoutExceededError('model', 100);
    case 'clientError':
      return new StatusError(404);
    case 'ignored':
      return new BulkheadFullError('model');
    case 'success':
      return undefined;
  }
}

interface RealCall {
  finish(): Promise<void>;
}

/** Starts a call on the real breaker; undefined when it was refused (the refusal is synchronous). */
function startReal(cb: CircuitBreakerPolicy, ending: Ending): RealCall | undefined {
  let invoked = false;
  let settle!: () => void;
  const settled = cb
    .execute(() => {
      invoked = true;
      return new Promise<string>((resolve, reject) => {
        settle = () => {
          const error = errorFor(ending);
          if (error === undefined) resolve('ok');
          else reject(error);
        };
      });
    })
    .catch(() => undefined);
  if (!invoked) return undefined;
  return {
    async finish() {
      settle();
      await settled;
    },
  };
}

const ending = fc.constantFrom<Ending>('success', 'success', 'failure', 'failure', 'timeout', 'clientError', 'ignored');

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('start' as const), ending }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('complete' as const), index: fc.nat() }) },
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('call' as const), ending, durationMs: fc.integer({ min: 0, max: 2500 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 4000 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('manual' as const),
      action: fc.constantFrom<Manual>('forceOpen', 'disable', 'metricsOnly', 'close', 'open', 'halfOpen', 'reset'),
    }),
  },
);

const settings: fc.Arbitrary<ModelSettings> = fc.record({
  slidingWindowType: fc.constantFrom('COUNT_BASED' as const, 'TIME_BASED' as const),
  slidingWindowSize: fc.integer({ min: 1, max: 5 }),
  minimumNumberOfCalls: fc.integer({ min: 1, max: 5 }),
  failureRateThreshold: fc.constantFrom(25, 50, 60, 100),
  slowCallRateThreshold: fc.constantFrom(50, 100),
  slowCallDurationThreshold: fc.integer({ min: 100, max: 2000 }),
  waitDurationInOpenState: fc.integer({ min: 500, max: 5000 }),
  permittedNumberOfCallsInHalfOpenState: fc.integer({ min: 1, max: 3 }),
  maxWaitDurationInHalfOpenState: fc.constantFrom(0, 0, 1000, 3000),
  transitionToStateAfterWaitDuration: fc.constantFrom('OPEN' as const, 'CLOSED' as const),
  automaticTransitionFromOpenToHalfOpenEnabled: fc.boolean(),
  enableExponentialBackoff: fc.boolean(),
  exponentialMaxWaitDurationInOpenState: fc.constantFrom(Number.POSITIVE_INFINITY, 4000, 12_000),
});

describe('CircuitBreakerPolicy against a reference model', () => {
  it('agrees on every state, window and permit decision over random call sequences', async () => {
    const seen = new Set<string>();
    const wanted = [
      'CLOSED->OPEN',
      'OPEN->HALF_OPEN',
      'HALF_OPEN->CLOSED',
      'HALF_OPEN->OPEN',
      'refused in OPEN',
      'refused in HALF_OPEN',
      'refused transition',
    ];
    // Each round draws fresh sequences; more rounds run (up to five) while some transition was never reached.
    for (let round = 0; round < 5 && !wanted.every((w) => seen.has(w)); round++)
      await fc.assert(
        fc.asyncProperty(settings, fc.array(op, { minLength: 1, maxLength: 80 }), async (s, ops) => {
          const clock = new VirtualClock();
          const cb = new CircuitBreakerPolicy(
            'model',
            { ...CIRCUIT_BREAKER_SCHEMA.defaults, exponentialBackoffMultiplier: MULTIPLIER, ...s },
            clock,
          );
          cb.onStateTransition((e) => seen.add(`${e.from}->${e.to}`));
          cb.onCallNotPermitted((e) => seen.add(`refused in ${e.state}`));
          const model = new ReferenceModel(s);
          const inFlight: Array<{ real: RealCall; model: ModelCall }> = [];

          const begin = (end: Ending): { real: RealCall; model: ModelCall } | undefined => {
            const expected = model.start(end);
            const real = startReal(cb, end);
            expect({ state: cb.state, permitted: real !== undefined }).toEqual({
              state: model.state,
              permitted: expected !== undefined,
            });
            return real && expected && { real, model: expected };
          };

          for (const step of ops) {
            switch (step.kind) {
              case 'start': {
                const call = begin(step.ending);
                if (call) inFlight.push(call);
                break;
              }
              case 'complete': {
                if (inFlight.length === 0) break;
                const [call] = inFlight.splice(step.index % inFlight.length, 1);
                model.complete(call.model);
                await call.real.finish();
                break;
              }
              case 'call': {
                const call = begin(step.ending);
                model.advance(step.durationMs);
                await clock.advance(step.durationMs);
                if (call) {
                  model.complete(call.model);
                  await call.real.finish();
                }
                break;
              }
              case 'advance':
                model.advance(step.ms);
                await clock.advance(step.ms);
                break;
              case 'manual': {
                const allowed = model.manual(step.action);
                const act = (): void => {
                  if (step.action === 'reset') cb.reset();
                  else if (step.action === 'forceOpen') cb.transitionToForcedOpenState();
                  else if (step.action === 'disable') cb.transitionToDisabledState();
                  else if (step.action === 'metricsOnly') cb.transitionToMetricsOnlyState();
                  else if (step.action === 'close') cb.transitionToClosedState();
                  else if (step.action === 'open') cb.transitionToOpenState();
                  else cb.transitionToHalfOpenState();
                };
                if (allowed) act();
                else {
                  expect(act).toThrow(IllegalStateTransitionError);
                  seen.add('refused transition');
                }
                break;
              }
            }
            const expected = model.rates();
            const m = cb.metrics;
            expect({
              state: cb.state,
              calls: m.numberOfBufferedCalls,
              failed: m.numberOfFailedCalls,
              slow: m.numberOfSlowCalls,
              failureRate: m.failureRate,
              slowCallRate: m.slowCallRate,
              notPermitted: m.numberOfNotPermittedCalls,
            }).toEqual({
              state: model.state,
              calls: expected.calls,
              failed: expected.failed,
              slow: expected.slow,
              failureRate: expected.failureRate,
              slowCallRate: expected.slowCallRate,
              notPermitted: model.notPermitted,
            });
          }
        }),
        { numRuns: 300 },
      );
    // The generated sequences must actually drive the breaker through its automatic transitions.
    expect([...seen]).toEqual(expect.arrayContaining(wanted));
  });
});
