import { INVALID_VALUE } from '../config/config.messages';
import { Duration, parseDuration } from '../config/duration';
import { entries } from '../observability/observability.options';
import { PRIORITY_LEVELS, PriorityLevel } from './priority.decorator';

/** The adaptive concurrency-limit algorithms. */
export type AdaptiveAlgorithm = 'gradient2' | 'vegas';

/** Module option `loadShedding.adaptive`: a concurrency limit that follows measured latency. */
export interface AdaptiveLimitOptions {
  /** `gradient2` (default) or `vegas`, as in Netflix's concurrency-limits. */
  algorithm?: AdaptiveAlgorithm;
  /** The limit before any request has been measured. Default 20. */
  initialLimit?: number;
  /** The limit never falls below this. Default 20 (gradient2) or 1 (vegas). */
  minLimit?: number;
  /** The limit never rises above this. Default 200 (gradient2) or 1000 (vegas). */
  maxLimit?: number;
  /** How far one estimate moves the limit, in (0, 1]. Default 0.2 (gradient2) or 1 (vegas). */
  smoothing?: number;
  /** gradient2: room the limit grows by while latency stays at its baseline. Default 4. */
  queueSize?: number;
  /** gradient2: samples the long-term latency average spans. Default 600. */
  longWindow?: number;
  /** vegas: the no-load latency is measured afresh about every `probeMultiplier × limit` samples. Default 30. */
  probeMultiplier?: number;
}

/** Module option `loadShedding.eventLoopDelay`: refuse while Node's event loop lags. */
export interface EventLoopDelayOptions {
  /** Refuse non-critical requests while the event loop's delay is over this. */
  threshold: Duration;
  /** The delay compared is the maximum seen over this period. Default 500 ms. */
  sampleInterval?: Duration;
}

/**
 * Module option `loadShedding`: admission control at the server's door.
 * Each signal is optional; a request must pass every one that is set.
 */
export interface LoadSheddingOptions {
  /** A fixed cap on requests in flight. */
  maxConcurrentRequests?: number;
  /** A cap that moves with measured latency (Gradient2 or Vegas). With `maxConcurrentRequests` too, the lower applies. */
  adaptive?: AdaptiveLimitOptions;
  /** Node's own overload signal: the event loop's delay. */
  eventLoopDelay?: EventLoopDelayOptions;
  /** The share of the limit each class gives up first, each in [0, 1). Default 0 for every class (no priorities). */
  priorities?: Partial<Record<PriorityLevel, number>>;
  /** A request header naming the class (`critical`, `high`, `normal`, `low`); wins over `@Priority`. Set it only where a gateway you trust writes it. */
  priorityHeader?: string;
  /** `Retry-After` of a refusal. Default 1 s. */
  retryAfter?: Duration;
}

/** `loadShedding.adaptive` after validation. */
export interface ResolvedAdaptiveOptions {
  readonly algorithm: AdaptiveAlgorithm;
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly smoothing: number;
  readonly queueSize: number;
  readonly longWindow: number;
  readonly probeMultiplier: number;
}

/** `loadShedding` after validation (durations in ms). */
export interface ResolvedLoadSheddingOptions {
  readonly maxConcurrentRequests?: number;
  readonly adaptive?: ResolvedAdaptiveOptions;
  readonly eventLoopDelay?: { readonly thresholdMs: number; readonly sampleIntervalMs: number };
  readonly shares: Readonly<Record<PriorityLevel, number>>;
  readonly priorityHeader?: string;
  readonly retryAfterMs: number;
}

const PLACE = 'loadShedding options';
const DEFAULT_RETRY_AFTER_MS = 1000;
const DEFAULT_SAMPLE_INTERVAL_MS = 500;
const NO_SHARES: Readonly<Record<PriorityLevel, number>> = { critical: 0, high: 0, normal: 0, low: 0 };

const ADAPTIVE_DEFAULTS: Readonly<Record<AdaptiveAlgorithm, Omit<ResolvedAdaptiveOptions, 'algorithm'>>> = {
  gradient2: {
    initialLimit: 20,
    minLimit: 20,
    maxLimit: 200,
    smoothing: 0.2,
    queueSize: 4,
    longWindow: 600,
    probeMultiplier: 30,
  },
  vegas: {
    initialLimit: 20,
    minLimit: 1,
    maxLimit: 1000,
    smoothing: 1,
    queueSize: 4,
    longWindow: 600,
    probeMultiplier: 30,
  },
};

/**
 * Validates module option `loadShedding`; absent, it sets no signal (every request is let in).
 *
 * @throws Error naming the key and the value when a setting is invalid
 */
export function readLoadSheddingOptions(raw: unknown): ResolvedLoadSheddingOptions {
  let maxConcurrentRequests: number | undefined;
  let adaptive: ResolvedAdaptiveOptions | undefined;
  let eventLoopDelay: ResolvedLoadSheddingOptions['eventLoopDelay'];
  let shares = NO_SHARES;
  let priorityHeader: string | undefined;
  let retryAfterMs = DEFAULT_RETRY_AFTER_MS;
  const known = ['maxConcurrentRequests', 'adaptive', 'eventLoopDelay', 'priorities', 'priorityHeader', 'retryAfter'];
  for (const [key, rawKey, value] of entries(raw ?? {}, PLACE, known)) {
    if (key === 'maxConcurrentRequests') maxConcurrentRequests = positiveInteger(value, PLACE, rawKey);
    else if (key === 'adaptive') adaptive = readAdaptive(value);
    else if (key === 'eventLoopDelay') eventLoopDelay = readEventLoopDelay(value);
    else if (key === 'priorities') shares = readShares(value);
    else if (key === 'priorityHeader') priorityHeader = headerName(value, rawKey);
    else retryAfterMs = duration(value, PLACE, rawKey);
  }
  return { maxConcurrentRequests, adaptive, eventLoopDelay, shares, priorityHeader, retryAfterMs };
}

function readAdaptive(raw: unknown): ResolvedAdaptiveOptions {
  const place = `${PLACE} 'adaptive'`;
  const fields = entries(raw, place, [
    'algorithm',
    'initialLimit',
    'minLimit',
    'maxLimit',
    'smoothing',
    'queueSize',
    'longWindow',
    'probeMultiplier',
  ]);
  const algorithmField = fields.find(([key]) => key === 'algorithm');
  const algorithm =
    algorithmField === undefined ? 'gradient2' : readAlgorithm(algorithmField[2], place, algorithmField[1]);
  const settings = { ...ADAPTIVE_DEFAULTS[algorithm] };
  for (const [key, rawKey, value] of fields) {
    if (key === 'algorithm') continue;
    if (key === 'smoothing') settings.smoothing = fraction(value, place, rawKey);
    else if (key === 'queueSize') settings.queueSize = nonNegativeNumber(value, place, rawKey);
    else
      settings[key as 'initialLimit' | 'minLimit' | 'maxLimit' | 'longWindow' | 'probeMultiplier'] = positiveInteger(
        value,
        place,
        rawKey,
      );
  }
  const explicit = new Set(fields.map(([key]) => key));
  // A minLimit or maxLimit set alone moves the other default out of its way rather than contradicting it.
  if (!explicit.has('minLimit'))
    settings.minLimit = Math.min(settings.minLimit, settings.initialLimit, settings.maxLimit);
  if (!explicit.has('maxLimit'))
    settings.maxLimit = Math.max(settings.maxLimit, settings.initialLimit, settings.minLimit);
  if (settings.minLimit > settings.maxLimit)
    throw new Error(INVALID_VALUE(place, 'minLimit', `at most maxLimit (${settings.maxLimit})`, settings.minLimit));
  if (settings.initialLimit < settings.minLimit || settings.initialLimit > settings.maxLimit) {
    throw new Error(
      INVALID_VALUE(
        place,
        'initialLimit',
        `between minLimit (${settings.minLimit}) and maxLimit (${settings.maxLimit})`,
        settings.initialLimit,
      ),
    );
  }
  return { algorithm, ...settings };
}

function readAlgorithm(value: unknown, place: string, rawKey: string): AdaptiveAlgorithm {
  const normalized = typeof value === 'string' ? value.toLowerCase() : value;
  if (normalized === 'gradient2' || normalized === 'vegas') return normalized;
  throw new Error(INVALID_VALUE(place, rawKey, "'gradient2' or 'vegas'", value));
}

function readEventLoopDelay(raw: unknown): ResolvedLoadSheddingOptions['eventLoopDelay'] {
  const place = `${PLACE} 'eventLoopDelay'`;
  let thresholdMs: number | undefined;
  let sampleIntervalMs = DEFAULT_SAMPLE_INTERVAL_MS;
  for (const [key, rawKey, value] of entries(raw, place, ['threshold', 'sampleInterval'])) {
    if (key === 'threshold') thresholdMs = duration(value, place, rawKey);
    else sampleIntervalMs = duration(value, place, rawKey);
  }
  if (thresholdMs === undefined)
    throw new Error(INVALID_VALUE(place, 'threshold', 'a positive duration (it is required)', undefined));
  return { thresholdMs, sampleIntervalMs };
}

function readShares(raw: unknown): Readonly<Record<PriorityLevel, number>> {
  const place = `${PLACE} 'priorities'`;
  const shares = { ...NO_SHARES };
  for (const [key, rawKey, value] of entries(raw, place, PRIORITY_LEVELS)) {
    if (typeof value !== 'number' || !(value >= 0 && value < 1))
      throw new Error(INVALID_VALUE(place, rawKey, 'a share in [0, 1)', value));
    shares[key as PriorityLevel] = value;
  }
  return shares;
}

function headerName(value: unknown, rawKey: string): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(value))
    throw new Error(INVALID_VALUE(PLACE, rawKey, 'an HTTP header name', value));
  return value.toLowerCase();
}

function positiveInteger(value: unknown, place: string, rawKey: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new Error(INVALID_VALUE(place, rawKey, 'a positive whole number', value));
  return value;
}

function nonNegativeNumber(value: unknown, place: string, rawKey: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new Error(INVALID_VALUE(place, rawKey, 'a number ≥ 0', value));
  return value;
}

function fraction(value: unknown, place: string, rawKey: string): number {
  if (typeof value !== 'number' || !(value > 0 && value <= 1))
    throw new Error(INVALID_VALUE(place, rawKey, 'a number in (0, 1]', value));
  return value;
}

function duration(value: unknown, place: string, rawKey: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0)
    throw new Error(INVALID_VALUE(place, rawKey, 'a positive duration', value));
  return ms;
}
