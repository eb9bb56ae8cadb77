import { Injectable } from '@nestjs/common';
import {
  CallNotPermittedError,
  CircuitBreaker,
  currentSignal,
  ResilienceRegistry,
  Timeout,
  TimeoutExceededError,
  VirtualClock,
} from '../lib';
import { bootScenario, ScenarioReport, Settled, table, track } from './kit';
import { lineChart } from './svg';

/*
 * The breaker experiment of docs/scenarios.md: a dependency is down for
 * 30 s of a 60 s run, callers send it 10 calls a second under a 2 s
 * timeout. Without a breaker every call in
 * the outage holds its caller for the full timeout; with a breaker (5
 * failures in a row open it for 10 s, one half-open trial) the outage turns
 * from "slow and failing" into "fast and failing".
 *
 * Thread-seconds: the sum over calls of the time the caller waited, from
 * the call's start to its settling, on the virtual clock. test/scenarios/
 * breaker-outage.spec.ts checks these figures to the call.
 */

export const RUN_MS = 60_000;
export const INTERVAL_MS = 100; // 10 calls a second
export const OUTAGE_START_MS = 15_000;
export const OUTAGE_END_MS = 45_000;
export const TIMEOUT_MS = 2_000;
/** 10 ms is what the reference model's 17 thread-seconds imply (see `referenceSimulation`). */
export const HEALTHY_LATENCY_MS = 10;

/** Calls in the run, and of them started during the outage. */
export const CALLS = RUN_MS / INTERVAL_MS; // 600
export const OUTAGE_CALLS = (OUTAGE_END_MS - OUTAGE_START_MS) / INTERVAL_MS; // 300

/** The reference breaker in Resilience4j terms: 5 failures of the last 5 calls open it for 10 s, one trial call. */
export const BREAKER = {
  slidingWindowType: 'COUNT_BASED',
  slidingWindowSize: 5,
  minimumNumberOfCalls: 5,
  failureRateThreshold: 100,
  waitDurationInOpenState: '10s',
  permittedNumberOfCallsInHalfOpenState: 1,
} as const;

/** What the reference model prints. */
export const BREAKER_REFERENCE = {
  none: { threadSeconds: 603.0, reached: 300 },
  breaker: { threadSeconds: 17.0, reached: 7 },
} as const;

/** True when `t` (ms) falls in the outage. */
export const inOutage = (t: number): boolean => t >= OUTAGE_START_MS && t < OUTAGE_END_MS;

/** The dependency: answers in 10 ms, except during the outage, when it never answers (it lets go only when the caller's signal aborts). */
@Injectable()
export class Dependency {
  reached = 0;
  reachedInOutage = 0;
  inFlight = 0;
  maxInFlight = 0;

  constructor(private readonly clock: VirtualClock) {}

  answer(): Promise<string> {
    this.reached++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const done = (): void => void this.inFlight--;
    if (!inOutage(this.clock.now())) {
      return new Promise<string>((resolve) => this.clock.setTimeout(() => resolve('ok'), HEALTHY_LATENCY_MS)).finally(
        done,
      );
    }
    this.reachedInOutage++;
    const signal = currentSignal();
    return new Promise<string>((_resolve, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    }).finally(done);
  }
}

/** Calls the dependency under a 2 s timeout only. */
@Injectable()
export class WithoutBreaker {
  constructor(readonly dependency: Dependency) {}

  @Timeout(TIMEOUT_MS)
  async call(): Promise<string> {
    return this.dependency.answer();
  }
}

/** The same call inside the breaker `dependency`. */
@Injectable()
export class WithBreaker {
  constructor(readonly dependency: Dependency) {}

  @CircuitBreaker('dependency')
  @Timeout(TIMEOUT_MS)
  async call(): Promise<string> {
    return this.dependency.answer();
  }
}

/** The figures of one run. */
export interface OutageFigures {
  readonly threadMs: number;
  readonly outageThreadMs: number;
  readonly reachedInOutage: number;
  readonly timedOut: number;
  readonly notPermitted: number;
  readonly succeeded: number;
}

/** One run on the real module, with what the test checks beyond the figures. */
export interface OutageRun extends OutageFigures {
  readonly calls: readonly Settled[];
  readonly dependency: Dependency;
  readonly breakerState?: string;
  /** `"<ms> <state>"` for each breaker transition. */
  readonly transitions: readonly string[];
}

/** One caller per tick for 60 s against the real decorated provider, then lets every call settle. */
export async function runOutage(cls: typeof WithoutBreaker | typeof WithBreaker): Promise<OutageRun> {
  // The callers are not inside a request deadline: 'always' lets the dependency see each attempt's signal.
  const { moduleRef, clock } = await bootScenario([Dependency, cls], {
    deadline: { attemptContext: 'always' },
    circuitBreaker: { instances: { dependency: BREAKER } },
  });
  try {
    const service = moduleRef.get<WithoutBreaker | WithBreaker>(cls);
    const breaker = cls === WithBreaker ? moduleRef.get(ResilienceRegistry).circuitBreaker('dependency') : undefined;
    const transitions: string[] = [];
    breaker?.onStateTransition(({ to }) => void transitions.push(`${clock.now()} ${to}`));
    const calls: Settled[] = [];
    for (let i = 0; i < CALLS; i++) {
      calls.push(track(clock, () => service.call()));
      await clock.advance(INTERVAL_MS);
    }
    await clock.advance(TIMEOUT_MS);
    const unsettled = calls.filter((c) => c.settledAt === undefined).length;
    if (unsettled > 0)
      throw new Error(`breaker scenario: ${unsettled} calls still pending ${TIMEOUT_MS} ms after the last one started`);

    let threadMs = 0;
    let outageThreadMs = 0;
    for (const c of calls) {
      const waited = c.settledAt! - c.startedAt;
      threadMs += waited;
      if (inOutage(c.startedAt)) outageThreadMs += waited;
    }
    return {
      threadMs,
      outageThreadMs,
      reachedInOutage: service.dependency.reachedInOutage,
      timedOut: calls.filter((c) => c.error instanceof TimeoutExceededError).length,
      notPermitted: calls.filter((c) => c.error instanceof CallNotPermittedError).length,
      succeeded: calls.filter((c) => c.value === 'ok').length,
      calls,
      dependency: service.dependency,
      breakerState: breaker?.state,
      transitions,
    };
  } finally {
    await moduleRef.close();
  }
}

/**
 * The reference model: the same calls and breaker, but the
 * breaker learns each outcome the moment the call starts (as a sequential
 * simulation does), so it opens after exactly 5 failed calls.
 */
export function referenceSimulation(): OutageFigures {
  const window: boolean[] = [];
  let state: 'CLOSED' | 'OPEN' | 'HALF_OPEN' = 'CLOSED';
  let openUntil = 0;
  const figures = { threadMs: 0, outageThreadMs: 0, reachedInOutage: 0, timedOut: 0, notPermitted: 0, succeeded: 0 };
  for (let t = 0; t < RUN_MS; t += INTERVAL_MS) {
    if (state === 'OPEN' && t >= openUntil) state = 'HALF_OPEN';
    if (state === 'OPEN') {
      figures.notPermitted++;
      continue;
    }
    const failed = inOutage(t);
    const waited = failed ? TIMEOUT_MS : HEALTHY_LATENCY_MS;
    figures.threadMs += waited;
    if (failed) {
      figures.outageThreadMs += waited;
      figures.reachedInOutage++;
      figures.timedOut++;
    } else {
      figures.succeeded++;
    }
    if (state === 'HALF_OPEN') {
      // one trial decides
      state = failed ? 'OPEN' : 'CLOSED';
      window.length = 0;
    } else {
      window.push(failed);
      if (window.length > BREAKER.slidingWindowSize) window.shift();
      if (window.length >= BREAKER.minimumNumberOfCalls && window.every(Boolean)) state = 'OPEN';
    }
    if (state === 'OPEN') openUntil = t + 10_000;
  }
  return figures;
}

/** Both runs and the reference. */
export interface BreakerResult {
  readonly none: OutageRun;
  readonly breaker: OutageRun;
  readonly reference: OutageFigures;
}

/** Runs the outage without and with the breaker. */
export async function runBreaker(): Promise<BreakerResult> {
  const none = await runOutage(WithoutBreaker);
  const breaker = await runOutage(WithBreaker);
  return { none, breaker, reference: referenceSimulation() };
}

const seconds = (ms: number): string => (ms / 1000).toFixed(1);

/** The printed table: the reference model's figures beside ours. */
export function breakerTable(r: BreakerResult): string {
  const row = (
    label: string,
    ref: { threadSeconds: number; reached: number } | undefined,
    f: OutageFigures,
  ): string[] => [
    label,
    ref ? ref.threadSeconds.toFixed(1) : '—',
    seconds(f.threadMs),
    ref ? `${ref.reached}/${OUTAGE_CALLS}` : '—',
    `${f.reachedInOutage}/${OUTAGE_CALLS}`,
    String(f.timedOut),
    String(f.notPermitted),
    String(f.succeeded),
  ];
  return [
    `breaker: ${CALLS} calls, 1 per ${INTERVAL_MS} ms; the dependency hangs from t=${OUTAGE_START_MS / 1000} s to t=${OUTAGE_END_MS / 1000} s, else answers in ${HEALTHY_LATENCY_MS} ms; @Timeout(${TIMEOUT_MS})`,
    `breaker: COUNT_BASED window 5, 100% failures, 10 s open, 1 half-open trial`,
    table(
      ['', 'thread-s ref', 'ours', 'reached ref', 'ours', 'timed out', 'refused', 'ok'],
      [
        row('no breaker', BREAKER_REFERENCE.none, r.none),
        row('breaker', BREAKER_REFERENCE.breaker, r.breaker),
        row('reference model, recomputed', undefined, r.reference),
      ],
    ),
    `no breaker / breaker: ${(r.none.threadMs / r.breaker.threadMs).toFixed(1)}x the thread-seconds, ` +
      `${(r.none.reachedInOutage / r.breaker.reachedInOutage).toFixed(1)}x the calls reaching the dead dependency.`,
    `Ours reach it more often than the sequential reference model: calls overlap, so the first timeout is heard ${TIMEOUT_MS / 1000} s ` +
      `after the outage starts and the breaker opens at t=${opensAt(r.breaker)} s, ${reachedBeforeOpen(r.breaker)} outage calls later; ` +
      `each half-open trial then waits out a timeout.`,
  ].join('\n');
}

/** When the breaker first opened, in seconds. */
function opensAt(run: OutageRun): number {
  return Number(run.transitions[0]?.split(' ')[0] ?? Number.NaN) / 1000;
}

/** Outage calls that started before the breaker first opened. */
function reachedBeforeOpen(run: OutageRun): number {
  const open = opensAt(run) * 1000;
  return run.calls.filter((c) => inOutage(c.startedAt) && c.startedAt < open).length;
}

/** Callers waiting, averaged over each 250 ms (thread-seconds per second); its area is the thread-seconds. */
function waitingOverTime(calls: readonly Settled[]): Array<readonly [number, number]> {
  const bucket = 250;
  const points: Array<readonly [number, number]> = [];
  for (let from = 0; from < RUN_MS + TIMEOUT_MS; from += bucket) {
    let heldMs = 0;
    for (const c of calls)
      heldMs += Math.max(0, Math.min(from + bucket, c.settledAt ?? from + bucket) - Math.max(from, c.startedAt));
    points.push([(from + bucket / 2) / 1000, heldMs / bucket]);
  }
  return points;
}

/** Callers waiting over time, without and with the breaker. */
export function breakerChart(r: BreakerResult): string {
  return lineChart({
    title: 'breaker: callers held waiting on a dependency that is down for 30 s',
    xLabel: 'time (s)',
    yLabel: 'callers waiting (threads held)',
    series: [
      { label: `no breaker: ${seconds(r.none.threadMs)} thread-seconds`, points: waitingOverTime(r.none.calls) },
      { label: `breaker: ${seconds(r.breaker.threadMs)} thread-seconds`, points: waitingOverTime(r.breaker.calls) },
    ],
    bands: [{ from: OUTAGE_START_MS / 1000, to: OUTAGE_END_MS / 1000, label: 'dependency down' }],
  });
}

/** The scenario as the CLI runs it. */
export async function breaker(): Promise<ScenarioReport> {
  const result = await runBreaker();
  return { table: breakerTable(result), svg: breakerChart(result) };
}
