import type { DurationHistogram } from './duration-histogram';
import { EventSubscriber, Unsubscribe } from './events';

/**
 * A listener's choice for one event type: the function to call with each
 * event, or `undefined` to leave that type unsubscribed (its stream stays
 * idle, so the policy builds no such event).
 */
export type EventTap = (type: string) => ((event: object) => void) | undefined;

/** What an instance tells the status endpoints about itself. */
export interface InstanceSnapshot {
  /** A circuit breaker's state. */
  readonly state?: string;
  /** The resolved settings. */
  readonly config?: object;
  /** The live counters or window. */
  readonly metrics?: object;
}

/** A value of a span event's attribute. */
export type SpanAttributeValue = string | number | boolean;

/** The attributes of one span event, by name (see `RESILIENCE_SPAN_ATTRIBUTES`); an undefined one is left out. */
export type SpanEventAttributes = Record<string, SpanAttributeValue | undefined>;

/**
 * Where a policy writes its span events: each goes on the span active when
 * it happens, if one is recording.
 */
export interface SpanEventSink {
  /** Adds span event `name` with `attributes`. */
  event(name: string, attributes: SpanEventAttributes): void;
  /** Adds span event `name` with `attributes` and those of `error` (its `error.type`, and whether a fault injected it). */
  failure(name: string, attributes: SpanEventAttributes, error: unknown): void;
}

/**
 * Where a policy writes what an operator needs to see as it happens, never
 * once per call: a line per transition, or two per episode.
 */
export interface TelemetryLog {
  /** Logs `message` at level log. */
  log(message: string): void;
  /** Logs `message` at level warn. */
  warn(message: string): void;
  /**
   * A run of events (denials, rejections, store failures) reported twice:
   * `start` at the first one, and `end` with their count and how long the
   * run lasted at the first activity (`watchActivity`) once none has
   * happened for the quiet period. Returns the function to call at each
   * event of a run.
   */
  episode<T>(
    watchActivity: (onActivity: () => void) => Unsubscribe,
    start: (first: T) => void,
    end: (count: number, durationMs: number) => void,
  ): (detail: T) => void;
}

/** An instance's row in a health check. */
export interface HealthReport {
  /** The check that reports it (`circuitBreakers` for the indicator's `check()`, `rateLimiters` for `checkRateLimiters()`). */
  readonly check: string;
  /** Its status (`DOWN` takes the check down) and what it reports with it. */
  readonly row: { readonly status: string };
}

/**
 * @internal The telemetry channel every policy reports to: its events, each
 * under Resilience4j's event type name, a snapshot of its state, and what
 * each listener reports of it (its span events, …). The event journal, the
 * status endpoints, the testing kit and the tracing listen through it, so a
 * policy reaches them with nothing written for that policy outside its folder.
 */
export interface PolicyTelemetry {
  /** Subscribes to each event type `tap` wants; returns the unsubscribe functions. */
  tapEvents(tap: EventTap): Unsubscribe[];
  /** The instance's state, settings and counters, now. */
  snapshot(): InstanceSnapshot;
  /** Subscribes to the events the tracing writes on spans, each written to `trace`; returns the unsubscribe functions. Absent: none. */
  traceEvents?(trace: SpanEventSink): Unsubscribe[];
  /** Subscribes to the events it logs, each logged through `log`; returns the unsubscribe functions. Absent: none. */
  logEvents?(log: TelemetryLog): Unsubscribe[];
  /** Its row in a health check, now; undefined while it does not report to one (`registerHealthIndicator` off). Absent: none. */
  healthReport?(): HealthReport | undefined;
  /**
   * Counts its calls and its degraded answers (a fallback's, a stale
   * cache's) for the health check's share of degraded answers, calling
   * `onCall` and `onDegraded`; returns the unsubscribe function. Absent: it
   * answers no call with a degraded answer.
   */
  countAnswers?(onCall: () => void, onDegraded: () => void): Unsubscribe;
}

/** @internal Subscribes `tap`'s listener for `type` to `subscribe`, if it wants one; adds the unsubscribe to `into`. */
export function tapStream<E extends object>(
  into: Unsubscribe[],
  tap: EventTap,
  type: string,
  subscribe: EventSubscriber<E>,
): void {
  const listener = tap(type);
  if (listener !== undefined) into.push(subscribe(listener));
}

/** @internal Subscribes `listener` to two event streams; the returned function unsubscribes it from both. */
export function onEither<A, B>(
  first: EventSubscriber<A>,
  second: EventSubscriber<B>,
  listener: (event: A | B) => void,
): Unsubscribe {
  const stopFirst = first(listener);
  const stopSecond = second(listener);
  return () => {
    stopFirst();
    stopSecond();
  };
}

/** @internal An error's own text, for a log line. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A Prometheus metric family. Samples of several instances (or
 * applications) with the same labels are added up (`sum`), or the highest
 * is kept (`max`, for rates).
 */
export interface MetricFamily {
  /** Its name, e.g. Resilience4j's `resilience4j_retry_calls_total`. */
  readonly name: string;
  /** Its Prometheus type. */
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** Its help text. */
  readonly help: string;
  /** How samples with the same labels combine. */
  readonly combine: 'sum' | 'max';
}

/** Where a policy writes the samples of one family, at scrape time. */
export interface MetricWriter {
  /** One sample of a counter or a gauge. */
  sample(labels: Readonly<Record<string, string>>, value: number): void;
  /**
   * The buckets, sum and count of a histogram of call durations, labelled
   * `name` and `kind` as Resilience4j's call timers are (a bucket's `le` is added).
   */
  histogram(name: string, kind: string, histogram: DurationHistogram): void;
}

/** What the metrics binding gives a policy when it starts counting for one instance. */
export interface MetricsStart {
  /** Where to push the subscriptions that feed the counts; they end when the instance is evicted or the binding closed. */
  readonly into: Unsubscribe[];
  /** A histogram of call durations in the binding's buckets. */
  histogram(this: void): DurationHistogram;
  /** The binding's `countCalls` option: how the calls of a fallback policy's method are counted, if they are. */
  countCalls?(this: void, policy: object, onCall: () => void): Unsubscribe;
}

/** One family of a kind of policy, and how an instance's samples are read. */
export interface MetricSeries<I, C, R> {
  /** The family. */
  readonly family: MetricFamily;
  /** Writes the samples of a live instance `instance`, whose counts the binding keeps in `counts`. */
  live(instance: I, counts: C, out: MetricWriter): void;
  /** Writes the counts kept of the evicted instances of `name`; absent for a gauge (an evicted instance has none). */
  retired?(this: void, name: string, counts: R, out: MetricWriter): void;
}

/**
 * @internal The Prometheus series of one kind of policy: its families, in
 * the order they are registered, the counts the binding keeps per instance
 * (`C`: counts no policy keeps, or where its own stood when first seen),
 * and the counts kept of the evicted instances of a name (`R`), so that no
 * counter goes down. Per-call work is only what `start` subscribes.
 */
export interface PolicyMetrics<I = object, C = unknown, R = unknown> {
  /** The policy, as the registry and the catalog name it (`retry`, `circuitBreaker`, `cache`…). */
  readonly policy: string;
  /** Its families and how each is read. */
  readonly series: readonly MetricSeries<I, C, R>[];
  /** Starts counting for `instance`; returns its counts. */
  start(instance: I, start: MetricsStart): C;
  /** The counts an evicted instance leaves, when it has counters; absent: it leaves none. */
  readonly retire?: {
    /** No counts yet. */
    empty(histogram: () => DurationHistogram): R;
    /** Adds what `instance` counted (`counts`) into `into`. */
    add(into: R, instance: I, counts: C): void;
  };
}
