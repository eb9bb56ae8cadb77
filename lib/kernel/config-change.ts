import type { EventStream } from './events';

/** A policy whose instances can be reconfigured while they run. */
export type ReconfigurablePolicy =
  'retry' | 'circuitBreaker' | 'bulkhead' | 'timeLimiter' | 'rateLimiter' | 'hedge' | 'cache';

/**
 * An instance's settings were replaced while it runs (`CONFIG_CHANGED`):
 * calls that start from now on use `after`; the instance's state is kept.
 */
export interface ConfigChangedEvent<C extends object = object> {
  /** The policy the instance belongs to. */
  readonly policy: ReconfigurablePolicy;
  /** The instance's name. */
  readonly name: string;
  /** The key of an instance used per key (the name's change reaches every key); else undefined. */
  readonly key?: string;
  /** The settings before the change (durations in ms). */
  readonly before: Readonly<C>;
  /** The settings from now on (durations in ms). */
  readonly after: Readonly<C>;
  /** The keys whose values differ, in the order of the settings. */
  readonly changed: readonly string[];
  /**
   * Circuit breakers: true when the sliding window's type or size changed, so
   * the window started empty. Hedges with a percentile delay: true when it
   * follows a fixed delay, so no latency is known yet (false when the
   * latencies known were kept).
   */
  readonly windowReset?: boolean;
}

/**
 * The `CONFIG_CHANGED` event of `instance`, published on `stream` when
 * someone listens; returned either way (the reconfiguring call answers it).
 * `windowReset` is a circuit breaker's only.
 */
export function publishConfigChange<C extends object>(
  stream: EventStream<ConfigChangedEvent<C>> | undefined,
  policy: ReconfigurablePolicy,
  instance: { readonly name: string; readonly key?: string },
  before: Readonly<C>,
  after: Readonly<C>,
  changed: readonly string[],
  windowReset?: boolean,
): ConfigChangedEvent<C> {
  const { name, key } = instance;
  const event: ConfigChangedEvent<C> =
    windowReset === undefined
      ? { policy, name, key, before, after, changed }
      : { policy, name, key, before, after, changed, windowReset };
  if (stream?.active === true) stream.emit(event);
  return event;
}

/**
 * True when `a` and `b` are the same setting: equal primitives, the same
 * function or class, arrays and plain objects of the same settings.
 */
export function sameSetting(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameSetting(v, b[i]));
  if (!isRecord(a) || !isRecord(b) || Array.isArray(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameSetting(a[k], b[k]));
}

/** The keys of `before` and `after` whose settings differ. */
export function changedSettings(before: object, after: object): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  return [...keys].filter((k) => !sameSetting(a[k], b[k]));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || Array.isArray(value);
}
