import { CanActivate, Type } from '@nestjs/common';
import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from '../config/config.messages';
import { Duration, parseDuration } from '../config/duration';
import { camelKey } from '../config/schema';

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
  /** Guards on every status route. */
  guards?: readonly GuardLike[];
  /** Routes that change state (forcing a breaker open, …). Off by default; needs guards of its own. */
  writable?: false | { guards: readonly GuardLike[] };
}

/** `metrics` after validation; `enabled: 'auto'` binds only if prom-client is installed. */
export interface ResolvedMetricsOptions {
  readonly enabled: boolean | 'auto';
  readonly registry?: MetricsRegistry;
  readonly buckets: readonly number[];
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

/** Validates module option `metrics` (an object, or a boolean for `enabled`). */
export function readMetricsOptions(raw: unknown): ResolvedMetricsOptions {
  if (raw === undefined || raw === null) return { enabled: 'auto', buckets: DEFAULT_BUCKETS };
  if (typeof raw === 'boolean') return { enabled: raw, buckets: DEFAULT_BUCKETS };
  const fields = entries(raw, METRICS, ['enabled', 'registry', 'buckets']);
  let enabled: boolean | 'auto' = 'auto';
  let registry: MetricsRegistry | undefined;
  let buckets = DEFAULT_BUCKETS;
  for (const [key, rawKey, value] of fields) {
    if (key === 'enabled') enabled = readBoolean(value, METRICS, rawKey);
    else if (key === 'registry') registry = readRegistry(value, rawKey);
    else buckets = readBuckets(value, rawKey);
  }
  return { enabled, registry, buckets };
}

/** Validates module option `health`. */
export function readHealthOptions(raw: unknown): ResolvedHealthOptions {
  if (raw === undefined || raw === null) return {};
  const fields = entries(raw, HEALTH, ['fallbackShare']);
  let fallbackShare: ResolvedHealthOptions['fallbackShare'];
  for (const [, rawKey, value] of fields) {
    if (value === undefined) continue;
    const place = `${HEALTH} '${rawKey}'`;
    let threshold: number | undefined;
    let windowMs = DEFAULT_FALLBACK_WINDOW_MS;
    let minimumNumberOfCalls = DEFAULT_FALLBACK_MINIMUM_CALLS;
    for (const [sub, rawSub, v] of entries(value, place, ['threshold', 'window', 'minimumNumberOfCalls'])) {
      if (sub === 'threshold') threshold = readPercent(v, place, rawSub);
      else if (sub === 'window') windowMs = readPositiveDuration(v, place, rawSub);
      else minimumNumberOfCalls = readInteger(v, place, rawSub, 1);
    }
    if (threshold === undefined)
      throw new Error(INVALID_VALUE(place, 'threshold', 'a percentage in (0, 100]', undefined));
    fallbackShare = { threshold, windowMs, minimumNumberOfCalls };
  }
  return { fallbackShare };
}

/** Validates module option `logging` (an object, or a boolean for `enabled`). */
export function readLoggingOptions(raw: unknown): ResolvedLoggingOptions {
  if (raw === undefined || raw === null) return { enabled: true, quietPeriodMs: DEFAULT_QUIET_PERIOD_MS };
  if (typeof raw === 'boolean') return { enabled: raw, quietPeriodMs: DEFAULT_QUIET_PERIOD_MS };
  let enabled = true;
  let quietPeriodMs = DEFAULT_QUIET_PERIOD_MS;
  for (const [key, rawKey, value] of entries(raw, LOGGING, ['enabled', 'quietPeriod'])) {
    if (key === 'enabled') enabled = readBoolean(value, LOGGING, rawKey);
    else quietPeriodMs = readPositiveDuration(value, LOGGING, rawKey);
  }
  return { enabled, quietPeriodMs };
}

/** Validates the options of `ResilienceEndpointsModule.forRoot`. */
export function readEndpointsOptions(raw: unknown): ResolvedEndpointsOptions {
  if (raw === undefined || raw === null) return {};
  let metrics: ResolvedEndpointsOptions['metrics'];
  let status: ResolvedEndpointsOptions['status'];
  for (const [key, rawKey, value] of entries(raw, ENDPOINTS, ['metrics', 'status'])) {
    if (value === undefined || value === false) continue;
    if (key === 'metrics') {
      let path = 'metrics';
      if (value !== true)
        for (const [, rawSub, v] of entries(value, `${ENDPOINTS} '${rawKey}'`, ['path']))
          path = readPath(v, rawKey, rawSub);
      metrics = { path };
    } else {
      status = readStatus(value, rawKey);
    }
  }
  return { metrics, status };
}

function readStatus(value: unknown, rawKey: string): NonNullable<ResolvedEndpointsOptions['status']> {
  const place = `${ENDPOINTS} '${rawKey}'`;
  let path = 'actuator';
  let eventBufferSize = DEFAULT_EVENT_BUFFER_SIZE;
  let errorMessages = false;
  let guards: readonly GuardLike[] = [];
  let writableGuards: readonly GuardLike[] | undefined;
  if (value !== true) {
    for (const [key, rawSub, v] of entries(value, place, [
      'path',
      'eventBufferSize',
      'errorMessages',
      'guards',
      'writable',
    ])) {
      if (key === 'path') path = readPath(v, rawKey, rawSub);
      else if (key === 'eventBufferSize') eventBufferSize = readInteger(v, place, rawSub, 1);
      else if (key === 'errorMessages') errorMessages = readBoolean(v, place, rawSub);
      else if (key === 'guards') guards = readGuards(v, place, rawSub, false);
      else if (v !== undefined && v !== false) {
        const writablePlace = `${place} '${rawSub}'`;
        let found: readonly GuardLike[] | undefined;
        for (const [, rawGuards, g] of entries(v, writablePlace, ['guards']))
          found = readGuards(g, writablePlace, rawGuards, true);
        if (found === undefined)
          throw new Error(
            INVALID_VALUE(writablePlace, 'guards', 'a non-empty list of guards (classes or instances)', undefined),
          );
        writableGuards = found;
      }
    }
  }
  return { path, eventBufferSize, errorMessages, guards, writableGuards };
}

/** The object's entries as [camelCase key, key as written, value], each checked against `known`. */
/**
 * The settings of an options object as `[camelCase key, key as written, value]`.
 *
 * @throws Error naming `place` when `raw` is not an object or a key is not in `known`
 */
export function entries(raw: unknown, place: string, known: readonly string[]): Array<[string, string, unknown]> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(NOT_AN_OBJECT(place, raw));
  return Object.entries(raw).map(([rawKey, value]) => {
    const key = camelKey(rawKey);
    if (!known.includes(key)) throw new Error(UNKNOWN_KEY(place, rawKey, known));
    return [key, rawKey, value];
  });
}

function readBoolean(value: unknown, place: string, key: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(INVALID_VALUE(place, key, 'true or false', value));
}

function readRegistry(value: unknown, key: string): MetricsRegistry {
  const r = value as Partial<Record<keyof MetricsRegistry, unknown>> | null;
  const ok =
    r !== null &&
    typeof r === 'object' &&
    typeof r.registerMetric === 'function' &&
    typeof r.getSingleMetric === 'function' &&
    typeof r.removeSingleMetric === 'function' &&
    typeof r.metrics === 'function';
  if (!ok) throw new Error(INVALID_VALUE(METRICS, key, 'a prom-client Registry', value));
  return value as MetricsRegistry;
}

function readBuckets(value: unknown, key: string): readonly number[] {
  const expected = 'a non-empty list of increasing positive numbers (seconds)';
  if (!Array.isArray(value) || value.length === 0) throw new Error(INVALID_VALUE(METRICS, key, expected, value));
  for (let i = 0; i < value.length; i++) {
    const b: unknown = value[i];
    if (typeof b !== 'number' || !Number.isFinite(b) || b <= 0 || (i > 0 && b <= (value[i - 1] as number))) {
      throw new Error(INVALID_VALUE(METRICS, key, expected, value));
    }
  }
  return Object.freeze([...(value as number[])]);
}

function readPercent(value: unknown, place: string, key: string): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > 100)
    throw new Error(INVALID_VALUE(place, key, 'a percentage in (0, 100]', value));
  return n;
}

function readPositiveDuration(value: unknown, place: string, key: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms === 0)
    throw new Error(INVALID_VALUE(place, key, 'a positive duration (ms number or "250ms", "2s", "1m")', value));
  return ms;
}

function readInteger(value: unknown, place: string, key: string, min: number): number {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min)
    throw new Error(INVALID_VALUE(place, key, `an integer >= ${min}`, value));
  return n;
}

function readPath(value: unknown, section: string, key: string): string {
  if (typeof value !== 'string' || !/^\/?[\w.~:-]+(\/[\w.~:-]+)*\/?$/.test(value)) {
    throw new Error(
      INVALID_VALUE(`${ENDPOINTS} '${section}'`, key, 'a route path such as "metrics" or "/ops/metrics"', value),
    );
  }
  return value.replace(/^\/+|\/+$/g, '');
}

function readGuards(value: unknown, place: string, key: string, required: boolean): readonly GuardLike[] {
  const isGuard = (g: unknown): boolean =>
    typeof g === 'function' ||
    (g !== null && typeof g === 'object' && typeof (g as CanActivate).canActivate === 'function');
  const expected = required
    ? 'a non-empty list of guards (classes or instances)'
    : 'a list of guards (classes or instances)';
  if (!Array.isArray(value) || (required && value.length === 0) || !value.every(isGuard))
    throw new Error(INVALID_VALUE(place, key, expected, value));
  return [...(value as GuardLike[])];
}
