import { CanActivate, Type } from '@nestjs/common';
import { Duration } from '../config/duration';
import { STATUS_PUBLIC_AND_GUARDED, STATUS_UNGUARDED } from './observability.messages';
import {
  booleanOption,
  durationOption,
  GivenOptions,
  integerOption,
  invalidOption,
  OptionReader,
  percentOption,
} from '../config/option-readers';

/**
 * What resilience4nest needs of a prom-client `Registry` (v15): a prom-client
 * registry fits it, and the package's types do not depend on prom-client.
 */
export interface MetricsRegistry {
  /** Registers a metric (resilience4nest passes its own families). */
  registerMetric(metric: never): void;
  /** The metric registered under `name`, if any. */
  getSingleMetric(name: string): unknown;
  /** Unregisters the metric named `name`. */
  removeSingleMetric(name: string): void;
  /** Every metric in the exposition format of `contentType`. */
  metrics(): Promise<string>;
  /** The exposition format's HTTP content type. */
  readonly contentType: string;
}

/** Module option `metrics`: Prometheus series through prom-client. */
export interface MetricsOptions {
  /** Bind the series. Default: on when prom-client can be loaded; `true` makes a missing prom-client a startup error. */
  enabled?: boolean;
  /** The registry to register in. Default: prom-client's global `register`. */
  registry?: MetricsRegistry;
  /** Upper bounds, in seconds, of the call-duration histogram's buckets. */
  buckets?: readonly number[];
  /**
   * Instances used per key also get series labelled `key`: one for each of
   * the `perKeySeries` most used keys of each name, and `key="other"` for
   * the rest, so their number stays bounded. The series of each name (every
   * key added in) are there either way. Default false.
   */
  perKey?: boolean;
  /** How many keys of each name get series of their own with `perKey`. Default 20. */
  perKeySeries?: number;
}

/** Module option `health.fallbackShare`: when the share of fallback answers makes the service unhealthy. */
export interface FallbackShareOptions {
  /** Share of calls to `@Fallback` methods answered by a fallback, in percent, at or above which the check is down. */
  threshold: number;
  /** How far back the share is computed. Default 1 minute. */
  window?: Duration;
  /** Calls needed in the window before the share can turn the check down. Default 10. */
  minimumNumberOfCalls?: number;
}

/** Module option `health`. */
export interface HealthOptions {
  /** Enables `ResilienceHealthIndicator.checkFallbacks()`. */
  fallbackShare?: FallbackShareOptions;
}

/** Module option `logging`: breaker transitions and episodes of budget denials and bulkhead rejections. */
export interface LoggingOptions {
  /** Log them. Default true. */
  enabled?: boolean;
  /** An episode of denials or rejections ends at the first call after this long without one. Default 10 s. */
  quietPeriod?: Duration;
}

/** A guard given as a class (resolved by Nest) or an instance. */
export type GuardLike = Type<CanActivate> | CanActivate;

/** Options of `ResilienceEndpointsModule.forRoot`. */
export interface ResilienceEndpointsOptions {
  /** Serve the metrics registry in the Prometheus text format. Default off; `true` serves it at `/metrics`. */
  metrics?: boolean | { path?: string };
  /** Status endpoints in the manner of Spring Boot Actuator's `circuitbreakers` and `circuitbreakerevents`. Default off. */
  status?: boolean | StatusEndpointOptions;
}

/** The status endpoints. */
export interface StatusEndpointOptions {
  /** Route prefix. Default `actuator`. */
  path?: string;
  /** Events kept per instance for the `…events` routes (Resilience4j's `eventConsumerBufferSize`). Default 100. */
  eventBufferSize?: number;
  /**
   * Serve each event's error message (`errorMessage`) besides its class and
   * status. Off by default: messages may carry request data (an e-mail
   * address, a key in a URL) that the endpoints' readers should not see.
   */
  errorMessages?: boolean;
  /**
   * Guards on every status route. Required (non-empty) unless `public` is
   * `true`: the routes serve every instance's config, the instance inventory
   * and the outbox state.
   */
  guards?: readonly GuardLike[];
  /**
   * Serve the read-only status routes without guards, to anyone who can
   * reach the port (a port only operators reach, a local run). Default
   * `false`; contradicts `guards`.
   */
  public?: boolean;
  /** Routes that change state (forcing a breaker open, …). Off by default; needs guards of its own. */
  writable?: false | { guards: readonly GuardLike[] };
}

/** `metrics` after validation; `enabled: 'auto'` binds only if prom-client is installed. */
export interface ResolvedMetricsOptions {
  readonly enabled: boolean | 'auto';
  readonly registry?: MetricsRegistry;
  readonly buckets: readonly number[];
  readonly perKey: boolean;
  readonly perKeySeries: number;
}

/** `health` after validation (durations in ms). */
export interface ResolvedHealthOptions {
  readonly fallbackShare?: {
    readonly threshold: number;
    readonly windowMs: number;
    readonly minimumNumberOfCalls: number;
  };
}

/** `logging` after validation (durations in ms). */
export interface ResolvedLoggingOptions {
  readonly enabled: boolean;
  readonly quietPeriodMs: number;
}

/** `ResilienceEndpointsModule` options after validation. */
export interface ResolvedEndpointsOptions {
  readonly metrics?: { readonly path: string };
  readonly status?: {
    readonly path: string;
    readonly eventBufferSize: number;
    readonly errorMessages: boolean;
    readonly guards: readonly GuardLike[];
    /** The read-only routes are served unguarded on purpose. */
    readonly public: boolean;
    readonly writableGuards?: readonly GuardLike[];
  };
}

/** Prometheus client's default buckets, in seconds. */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DEFAULT_FALLBACK_WINDOW_MS = 60_000;
const DEFAULT_FALLBACK_MINIMUM_CALLS = 10;
const DEFAULT_QUIET_PERIOD_MS = 10_000;
const DEFAULT_EVENT_BUFFER_SIZE = 100;

const METRICS = 'metrics options';
const HEALTH = 'health options';
const LOGGING = 'logging options';
const ENDPOINTS = 'ResilienceEndpointsModule options';

const positiveDuration = durationOption({
  positive: true,
  expected: 'a positive duration (ms number or "250ms", "2s", "1m")',
});
const atLeastOne = integerOption(1);

/** Validates module option `metrics` (an object, or a boolean for `enabled`). */
export function readMetricsOptions(raw: unknown): ResolvedMetricsOptions {
  const keys = { perKey: false, perKeySeries: DEFAULT_PER_KEY_SERIES };
  if (raw === undefined || raw === null) return { enabled: 'auto', buckets: DEFAULT_BUCKETS, ...keys };
  if (typeof raw === 'boolean') return { enabled: raw, buckets: DEFAULT_BUCKETS, ...keys };
  const given = new GivenOptions(raw, METRICS, ['enabled', 'registry', 'buckets', 'perKey', 'perKeySeries']);
  return {
    enabled: given.read('enabled', booleanOption) ?? 'auto',
    registry: given.read('registry', registryOption),
    buckets: given.read('buckets', bucketsOption) ?? DEFAULT_BUCKETS,
    perKey: given.read('perKey', booleanOption) ?? false,
    perKeySeries: given.read('perKeySeries', perKeySeriesOption) ?? DEFAULT_PER_KEY_SERIES,
  };
}

/** Validates module option `health`. */
export function readHealthOptions(raw: unknown): ResolvedHealthOptions {
  if (raw === undefined || raw === null) return {};
  const share = new GivenOptions(raw, HEALTH, ['fallbackShare']).nested('fallbackShare', [
    'threshold',
    'window',
    'minimumNumberOfCalls',
  ]);
  if (share === undefined) return { fallbackShare: undefined };
  const threshold =
    share.read('threshold', percentOption) ??
    invalidOption(share.place, 'threshold', 'a percentage in (0, 100]', undefined);
  return {
    fallbackShare: {
      threshold,
      windowMs: share.read('window', positiveDuration) ?? DEFAULT_FALLBACK_WINDOW_MS,
      minimumNumberOfCalls: share.read('minimumNumberOfCalls', atLeastOne) ?? DEFAULT_FALLBACK_MINIMUM_CALLS,
    },
  };
}

/** Validates module option `logging` (an object, or a boolean for `enabled`). */
export function readLoggingOptions(raw: unknown): ResolvedLoggingOptions {
  if (raw === undefined || raw === null) return { enabled: true, quietPeriodMs: DEFAULT_QUIET_PERIOD_MS };
  if (typeof raw === 'boolean') return { enabled: raw, quietPeriodMs: DEFAULT_QUIET_PERIOD_MS };
  const given = new GivenOptions(raw, LOGGING, ['enabled', 'quietPeriod']);
  return {
    enabled: given.read('enabled', booleanOption) ?? true,
    quietPeriodMs: given.read('quietPeriod', positiveDuration) ?? DEFAULT_QUIET_PERIOD_MS,
  };
}

/** Validates the options of `ResilienceEndpointsModule.forRoot`. */
export function readEndpointsOptions(raw: unknown): ResolvedEndpointsOptions {
  if (raw === undefined || raw === null) return {};
  const given = new GivenOptions(raw, ENDPOINTS, ['metrics', 'status']);
  return { metrics: readMetricsRoute(given), status: readStatus(given) };
}

function readMetricsRoute(endpoints: GivenOptions): ResolvedEndpointsOptions['metrics'] {
  const value = endpoints.raw('metrics');
  if (value === undefined || value === false) return undefined;
  if (value === true) return { path: 'metrics' };
  return { path: endpoints.nested('metrics', ['path'])?.read('path', pathOption) ?? 'metrics' };
}

function readStatus(endpoints: GivenOptions): ResolvedEndpointsOptions['status'] {
  const value = endpoints.raw('status');
  if (value === undefined || value === false) return undefined;
  if (value === true) throw new Error(STATUS_UNGUARDED);
  const status = endpoints.nested('status', [
    'path',
    'eventBufferSize',
    'errorMessages',
    'guards',
    'public',
    'writable',
  ]) as GivenOptions;
  const resolved = {
    path: status.read('path', pathOption) ?? 'actuator',
    eventBufferSize: status.read('eventBufferSize', atLeastOne) ?? DEFAULT_EVENT_BUFFER_SIZE,
    errorMessages: status.read('errorMessages', booleanOption) ?? false,
    guards: status.read('guards', guardsOption(false)) ?? [],
    public: status.read('public', booleanOption) ?? false,
    writableGuards: readWritable(status),
  };
  if (resolved.public && resolved.guards.length > 0) throw new Error(STATUS_PUBLIC_AND_GUARDED);
  if (!resolved.public && resolved.guards.length === 0) throw new Error(STATUS_UNGUARDED);
  return resolved;
}

function readWritable(status: GivenOptions): readonly GuardLike[] | undefined {
  const value = status.raw('writable');
  if (value === undefined || value === false) return undefined;
  const writable = status.nested('writable', ['guards']) as GivenOptions;
  return (
    writable.read('guards', guardsOption(true)) ??
    invalidOption(writable.place, 'guards', 'a non-empty list of guards (classes or instances)', undefined)
  );
}

const perKeySeriesOption = integerOption(1);

/** Keys of each name with series of their own when `perKeySeries` is not given. */
export const DEFAULT_PER_KEY_SERIES = 20;

function registryOption(value: unknown, place: string, key: string): MetricsRegistry {
  const r = value as Partial<Record<keyof MetricsRegistry, unknown>> | null;
  const ok =
    r !== null &&
    typeof r === 'object' &&
    typeof r.registerMetric === 'function' &&
    typeof r.getSingleMetric === 'function' &&
    typeof r.removeSingleMetric === 'function' &&
    typeof r.metrics === 'function';
  return ok ? (value as MetricsRegistry) : invalidOption(place, key, 'a prom-client Registry', value);
}

function bucketsOption(value: unknown, place: string, key: string): readonly number[] {
  const expected = 'a non-empty list of increasing positive numbers (seconds)';
  if (!Array.isArray(value) || value.length === 0) invalidOption(place, key, expected, value);
  for (let i = 0; i < value.length; i++) {
    const b: unknown = value[i];
    if (typeof b !== 'number' || !Number.isFinite(b) || b <= 0 || (i > 0 && b <= (value[i - 1] as number)))
      invalidOption(place, key, expected, value);
  }
  return Object.freeze([...(value as number[])]);
}

function pathOption(value: unknown, place: string, key: string): string {
  if (typeof value !== 'string' || !/^\/?[\w.~:-]+(\/[\w.~:-]+)*\/?$/.test(value))
    invalidOption(place, key, 'a route path such as "metrics" or "/ops/metrics"', value);
  return value.replace(/^\/+|\/+$/g, '');
}

function guardsOption(required: boolean): OptionReader<readonly GuardLike[]> {
  const expected = required
    ? 'a non-empty list of guards (classes or instances)'
    : 'a list of guards (classes or instances)';
  return (value, place, key) => {
    if (!Array.isArray(value) || (required && value.length === 0) || !value.every(isGuard))
      invalidOption(place, key, expected, value);
    return [...(value as GuardLike[])];
  };
}

function isGuard(g: unknown): boolean {
  return (
    typeof g === 'function' ||
    (g !== null && typeof g === 'object' && typeof (g as CanActivate).canActivate === 'function')
  );
}
