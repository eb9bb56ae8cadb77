import { ConfigPlace } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import {
  durationOption,
  enumOption,
  GivenOptions,
  headerNameOption,
  integerOption,
  invalidOption,
  numberOption,
} from '../../config/option-readers';
import { PRIORITY_LEVELS, PriorityLevel } from './priority.decorator';

/** The adaptive concurrency-limit algorithms. */
export type AdaptiveAlgorithm = 'gradient2' | 'vegas';

/** Module option `loadShedding.adaptive`: a concurrency limit that follows measured latency. */
export interface AdaptiveLimitOptions {
  /** `gradient2` (default) or `vegas`, as in Netflix's concurrency-limits. */
  algorithm?: AdaptiveAlgorithm;
  /** The limit before any request has been measured. Default 20. */
  initialLimit?: number;
  /** The limit never falls below this. Default 5 (gradient2) or 1 (vegas). */
  minLimit?: number;
  /** The limit never rises above this. Default 200 (gradient2) or 1000 (vegas). */
  maxLimit?: number;
  /** How far one estimate moves the limit, in (0, 1]. Default 0.2 (gradient2) or 1 (vegas). */
  smoothing?: number;
  /** gradient2: room the limit grows by while latency stays at its baseline. Default 3. */
  queueSize?: number;
  /** gradient2: samples the long-term latency average spans. Default 600. */
  longWindow?: number;
  /** The no-load latency is measured afresh, with the limit halved until 20 requests have been served within it, about every `probeMultiplier × limit` samples (each the average of 20 finished requests). Default 30. */
  probeMultiplier?: number;
}

/** Module option `loadShedding.eventLoopDelay`: refuse while Node's event loop lags. */
export interface EventLoopDelayOptions {
  /** Refuse non-critical requests while the event loop's delay is over this. */
  threshold: Duration;
  /** The delay compared is the maximum seen over this period; one over `threshold` counts as soon as it is seen. Default 500 ms. */
  sampleInterval?: Duration;
}

/** Module option `loadShedding.priorityHeader` in its object form: a header that may claim a class, within a cap. */
export interface PriorityHeaderOptions {
  /** The request header naming the class (`critical`, `high`, `normal`, `low`). */
  name: string;
  /**
   * The highest class the header may raise a request to; a route's own
   * `@Priority`, when higher, is kept. Without it the header can only lower
   * a request below its route's class.
   */
  max?: PriorityLevel;
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
  /**
   * A request header naming the class (`critical`, `high`, `normal`, `low`).
   * As `{ name }` it can only lower a request below its route's `@Priority`;
   * as `{ name, max }` it can raise one up to `max`. As a bare name it wins
   * over `@Priority` whatever it claims (`max: 'critical'`): use that only
   * where a gateway you trust writes the header.
   */
  priorityHeader?: string | PriorityHeaderOptions;
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

/** `loadShedding.priorityHeader` after validation: the header's name in lower case, and the highest class it may claim. */
export interface ResolvedPriorityHeader {
  readonly name: string;
  readonly max: PriorityLevel;
}

/** `loadShedding` after validation (durations in ms). */
export interface ResolvedLoadSheddingOptions {
  readonly maxConcurrentRequests?: number;
  readonly adaptive?: ResolvedAdaptiveOptions;
  readonly eventLoopDelay?: { readonly thresholdMs: number; readonly sampleIntervalMs: number };
  readonly shares: Readonly<Record<PriorityLevel, number>>;
  readonly priorityHeader?: ResolvedPriorityHeader;
  readonly retryAfterMs: number;
}

const PLACE = 'loadShedding options';
const DEFAULT_RETRY_AFTER_MS = 1000;
const DEFAULT_SAMPLE_INTERVAL_MS = 500;
const NO_SHARES: Readonly<Record<PriorityLevel, number>> = { critical: 0, high: 0, normal: 0, low: 0 };

const ADAPTIVE_DEFAULTS: Readonly<Record<AdaptiveAlgorithm, Omit<ResolvedAdaptiveOptions, 'algorithm'>>> = {
  gradient2: {
    initialLimit: 20,
    minLimit: 5,
    maxLimit: 200,
    smoothing: 0.2,
    queueSize: 3,
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

const positiveDuration = durationOption({ positive: true, expected: 'a positive duration' });
const positiveInteger = integerOption(1, undefined, 'a positive whole number');
const share = numberOption({ min: 0, max: 1, exclusiveMax: true }, 'a share in [0, 1)');
const ADAPTIVE_KEYS = [
  'algorithm',
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'queueSize',
  'longWindow',
  'probeMultiplier',
] as const;
const LIMIT_KEYS = ['initialLimit', 'minLimit', 'maxLimit', 'longWindow', 'probeMultiplier'] as const;

/**
 * Validates module option `loadShedding`; absent, it sets no signal (every request is let in).
 *
 * @throws Error naming the key and the value when a setting is invalid
 */
export function readLoadSheddingOptions(raw: unknown): ResolvedLoadSheddingOptions {
  const given = new GivenOptions(raw ?? {}, PLACE, [
    'maxConcurrentRequests',
    'adaptive',
    'eventLoopDelay',
    'priorities',
    'priorityHeader',
    'retryAfter',
  ]);
  return {
    maxConcurrentRequests: given.read('maxConcurrentRequests', positiveInteger),
    adaptive: given.read('adaptive', readAdaptive),
    eventLoopDelay: given.read('eventLoopDelay', readEventLoopDelay),
    shares: given.read('priorities', readShares) ?? NO_SHARES,
    priorityHeader: given.read('priorityHeader', readPriorityHeader),
    retryAfterMs: given.read('retryAfter', positiveDuration) ?? DEFAULT_RETRY_AFTER_MS,
  };
}

function readAdaptive(raw: unknown): ResolvedAdaptiveOptions {
  const place = `${PLACE} 'adaptive'`;
  const given = new GivenOptions(raw, place, ADAPTIVE_KEYS);
  const algorithm =
    given.read('algorithm', enumOption<AdaptiveAlgorithm>(['gradient2', 'vegas'], "'gradient2' or 'vegas'")) ??
    'gradient2';
  const settings = { ...ADAPTIVE_DEFAULTS[algorithm] };
  for (const key of LIMIT_KEYS) settings[key] = given.read(key, positiveInteger) ?? settings[key];
  settings.smoothing =
    given.read('smoothing', numberOption({ min: 0, exclusiveMin: true, max: 1 }, 'a number in (0, 1]')) ??
    settings.smoothing;
  settings.queueSize = given.read('queueSize', numberOption({ min: 0 }, 'a number ≥ 0')) ?? settings.queueSize;
  // A minLimit or maxLimit set alone moves the other default out of its way rather than contradicting it.
  if (!given.has('minLimit')) settings.minLimit = Math.min(settings.minLimit, settings.initialLimit, settings.maxLimit);
  if (!given.has('maxLimit')) settings.maxLimit = Math.max(settings.maxLimit, settings.initialLimit, settings.minLimit);
  if (settings.minLimit > settings.maxLimit)
    invalidOption(place, 'minLimit', `at most maxLimit (${settings.maxLimit})`, settings.minLimit);
  if (settings.initialLimit < settings.minLimit || settings.initialLimit > settings.maxLimit)
    invalidOption(
      place,
      'initialLimit',
      `between minLimit (${settings.minLimit}) and maxLimit (${settings.maxLimit})`,
      settings.initialLimit,
    );
  return { algorithm, ...settings };
}

function readEventLoopDelay(raw: unknown): NonNullable<ResolvedLoadSheddingOptions['eventLoopDelay']> {
  const place = `${PLACE} 'eventLoopDelay'`;
  const given = new GivenOptions(raw, place, ['threshold', 'sampleInterval']);
  const thresholdMs =
    given.read('threshold', positiveDuration) ??
    invalidOption(place, 'threshold', 'a positive duration (it is required)', undefined);
  return {
    thresholdMs,
    sampleIntervalMs: given.read('sampleInterval', positiveDuration) ?? DEFAULT_SAMPLE_INTERVAL_MS,
  };
}

const priorityLevel = enumOption<PriorityLevel>(PRIORITY_LEVELS);

function readPriorityHeader(raw: unknown, place: ConfigPlace, key: string): ResolvedPriorityHeader {
  if (typeof raw === 'string') return { name: headerNameOption(raw, place, key).toLowerCase(), max: 'critical' };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return invalidOption(place, key, 'an HTTP header name or { name, max }', raw);
  const given = new GivenOptions(raw, place, ['name', 'max'], { prefix: `${key}.` });
  const name =
    given.read('name', headerNameOption) ??
    invalidOption(place, given.written('name'), 'an HTTP header name (it is required)', undefined);
  // Without a cap the header can only lower: the lowest class never lifts a route above its own.
  return { name: name.toLowerCase(), max: given.read('max', priorityLevel) ?? 'low' };
}

function readShares(raw: unknown): Readonly<Record<PriorityLevel, number>> {
  const given = new GivenOptions(raw, `${PLACE} 'priorities'`, PRIORITY_LEVELS);
  const shares = { ...NO_SHARES };
  for (const level of PRIORITY_LEVELS) shares[level] = given.read(level, share) ?? shares[level];
  return shares;
}
