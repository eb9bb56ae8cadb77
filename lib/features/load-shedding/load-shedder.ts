import { Clock } from '../../kernel/clock';
import { AdaptiveLimit } from './adaptive-limit';
import { BaselineProbe } from './baseline-probe';
import { EventLoopDelayProbe, EventLoopDelaySignal } from './event-loop-delay';
import { Gradient2Limit } from './gradient2-limit';
import { ResolvedLoadSheddingOptions } from './load-shedding.options';
import { PRIORITY_LEVELS, PriorityLevel } from './priority.decorator';
import { VegasLimit } from './vegas-limit';

/**
 * Finished requests an adaptive limit reads as one latency sample, and a
 * probe of its no-load latency averages ({@link BaselineProbe}). Vegas's
 * no-load latency is the least it has seen: with single requests that is
 * the fastest one, and every ordinary one looks queued (under a 20-slot
 * pool of 50–150 ms work it fell to 9 and left 42% of capacity idle).
 * Gradient2 grew by its queue allowance at every request whose latency
 * happened to be below average, so it held a queue of its own. The average
 * of 20 is within a few percent of the true mean.
 */
const ADAPTIVE_WINDOW = 20;

/** Why a request was refused at the door, as metrics count it. */
export type ShedReason = 'concurrency' | 'event-loop-delay' | 'deadline';

/**
 * Why {@link LoadShedder.tryAdmit} refused: `priority` is a refusal within the
 * limit, because the request's class gave up its share (counted as `concurrency`).
 */
export type Refusal = 'concurrency' | 'event-loop-delay' | 'priority';

/** Every refusal reason, in the order metrics list them. */
export const SHED_REASONS: readonly ShedReason[] = ['concurrency', 'event-loop-delay', 'deadline'];

/** A request let in: what {@link LoadShedder.release} needs when it ends. */
export interface Admission {
  /** Clock reading at admission. */
  readonly startedAt: number;
  /** Requests in flight right after it was let in. */
  readonly inflight: number;
}

/**
 * Admission control for a server: a fixed cap and/or an adaptive limit on
 * requests in flight, the event loop's delay, and priorities that make lower
 * classes give up their share of the limit first. Injectable in a Nest
 * application (`limit` and `inflight` are live); usable without Nest.
 */
export class LoadShedder {
  private active = 0;
  private readonly adaptiveLimit: AdaptiveLimit | undefined;
  private readonly delay: EventLoopDelaySignal | undefined;
  private readonly shedCounts = new Float64Array(SHED_REASONS.length * PRIORITY_LEVELS.length);

  /**
   * @param options - validated `loadShedding` options
   * @param clock - time for latency samples and the delay sampler
   * @param random - uniform [0, 1) source (Vegas's probe jitter)
   * @param probe - event-loop delay source, when `eventLoopDelay` is set
   *
   * @internal
   */
  constructor(
    /** @internal */
    readonly options: ResolvedLoadSheddingOptions,
    private readonly clock: Clock,
    random: () => number,
    probe?: EventLoopDelayProbe,
  ) {
    const adaptive = options.adaptive;
    if (adaptive !== undefined) {
      this.adaptiveLimit = new BaselineProbe(
        adaptive.algorithm === 'vegas' ? new VegasLimit(adaptive) : new Gradient2Limit(adaptive),
        { windowSize: ADAPTIVE_WINDOW, probeMultiplier: adaptive.probeMultiplier, minLimit: adaptive.minLimit, random },
      );
    }
    const eventLoop = options.eventLoopDelay;
    if (eventLoop !== undefined && probe !== undefined) {
      this.delay = new EventLoopDelaySignal(probe, clock, eventLoop.thresholdMs, eventLoop.sampleIntervalMs);
    }
  }

  /** The concurrency limit in force (the lower of the fixed cap and the adaptive limit); `Infinity` with neither. */
  get limit(): number {
    const fixed = this.options.maxConcurrentRequests ?? Infinity;
    return this.adaptiveLimit === undefined ? fixed : Math.min(fixed, Math.floor(this.adaptiveLimit.limit));
  }

  /** Requests admitted and not yet answered. */
  get inflight(): number {
    return this.active;
  }

  /** The event loop's delay over the last sampling period, in ms (0 when not measured). */
  get eventLoopDelayMs(): number {
    return this.delay?.delayMs ?? 0;
  }

  /** Whether a request of any class but `critical` would now be refused for event-loop delay or the limit. */
  get overloaded(): boolean {
    return this.delay?.overloaded === true || this.active >= this.admissible('normal');
  }

  /** Starts the event-loop sampler. */
  start(): void {
    this.delay?.start();
  }

  /** Stops the event-loop sampler. */
  stop(): void {
    this.delay?.stop();
  }

  /**
   * Lets a request of class `priority` in, or says why not. A request let
   * in must be given back with {@link LoadShedder.release} when it ends.
   */
  tryAdmit(priority: PriorityLevel): Admission | Refusal {
    let refusal: Refusal | undefined;
    if (priority !== 'critical' && this.delay?.overloaded === true) refusal = 'event-loop-delay';
    else if (this.active >= this.admissible(priority)) refusal = this.active >= this.limit ? 'concurrency' : 'priority';
    if (refusal !== undefined) {
      this.countShed(refusal === 'priority' ? 'concurrency' : refusal, priority);
      return refusal;
    }
    this.active++;
    return { startedAt: this.clock.now(), inflight: this.active };
  }

  /** Counts a request refused at the door because its deadline had already passed. */
  refuseExpired(priority: PriorityLevel): void {
    this.countShed('deadline', priority);
  }

  /**
   * Gives back the place of a request that has ended.
   *
   * @param dropped - whether it ended as an overload answer (503, 504) or was abandoned: the adaptive limit shrinks
   */
  release(admission: Admission, dropped: boolean): void {
    this.active--;
    this.adaptiveLimit?.onSample(this.clock.now() - admission.startedAt, admission.inflight, dropped);
  }

  /** Requests refused for `reason` in class `priority` so far. */
  shed(reason: ShedReason, priority: PriorityLevel): number {
    return this.shedCounts[SHED_REASONS.indexOf(reason) * PRIORITY_LEVELS.length + PRIORITY_LEVELS.indexOf(priority)];
  }

  /** How many may be in flight for a request of class `priority` to be let in. */
  private admissible(priority: PriorityLevel): number {
    const limit = this.limit;
    if (limit === Infinity) return Infinity;
    const allowed = Math.floor(limit * (1 - this.options.shares[priority]));
    return priority === 'critical' ? Math.max(1, allowed) : allowed;
  }

  private countShed(reason: ShedReason, priority: PriorityLevel): void {
    this.shedCounts[SHED_REASONS.indexOf(reason) * PRIORITY_LEVELS.length + PRIORITY_LEVELS.indexOf(priority)]++;
  }
}
