import { formatMs } from '../kernel/format-ms';
import { PREFIX } from '../kernel/resilience.messages';
import type { ConfigChangedEvent } from '../kernel/config-change';

/** A family's name is taken in the prom-client registry by a metric of someone else. */
export const FOREIGN_METRIC = (metric: string): string =>
  `${PREFIX}: the prom-client registry already holds a metric named '${metric}' that resilience4nest did not register; ` +
  `remove it, or give resilience4nest its own registry with the module option 'metrics.registry'`;

/** Another application registered the duration histogram with other buckets. */
export const BUCKETS_DIFFER = (metric: string, registered: readonly number[], wanted: readonly number[]): string =>
  `${PREFIX}: metric '${metric}' is already registered in this prom-client registry by another application with buckets ` +
  `[${registered.join(', ')}], not [${wanted.join(', ')}]; give both applications the same 'metrics.buckets' or separate registries`;

/** An instance's settings changed while it runs: one line per change, naming each key changed. */
export const CONFIG_CHANGED = (event: ConfigChangedEvent): string => {
  const before = event.before as Record<string, unknown>;
  const after = event.after as Record<string, unknown>;
  const keys = event.changed.map((k) => `${k} ${shownSetting(before[k])} -> ${shownSetting(after[k])}`).join(', ');
  const window =
    event.windowReset !== true
      ? ''
      : event.policy === 'hedge'
        ? ' (its latency window starts empty)'
        : ' (the sliding window starts empty)';
  return `${event.policy} '${event.name}' reconfigured: ${keys}${window}; calls from now on use the new settings`;
};

/** What a log line of the instance of one key adds: the key, quoted and escaped, so request data cannot break the line. */
export const OF_KEY = (key: string): string =>
  ` (key ${JSON.stringify(key.length > MAX_KEY_SHOWN ? `${key.slice(0, MAX_KEY_SHOWN)}…` : key)})`;

/** The longest key a log line shows whole. */
const MAX_KEY_SHOWN = 100;

/** A setting as a log line shows it: functions and classes by name. */
function shownSetting(value: unknown): string {
  if (typeof value === 'function') return value.name || '(anonymous function)';
  if (value === undefined) return 'unset';
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'function' ? v.name || '(anonymous function)' : v));
}

/** A feature needs the metrics registry, but metrics are off. */
export const METRICS_DISABLED = (feature: string): string =>
  `${PREFIX}: ${feature} needs metrics, but they are off (module option 'metrics' is false, or prom-client is not installed)`;

/** `checkFallbacks()` was called without module option `health.fallbackShare`. */
export const LOAD_SHEDDING_NOT_CONFIGURED = `${PREFIX}: ResilienceHealthIndicator.checkOverload() needs the module option 'loadShedding' (e.g. { maxConcurrentRequests: 200 })`;

export const FALLBACK_SHARE_NOT_CONFIGURED = `${PREFIX}: ResilienceHealthIndicator.checkFallbacks() needs the module option 'health.fallbackShare' (e.g. { threshold: 50, window: '1m' })`;

/** The status routes were asked for with neither guards nor `public: true`. */
export const STATUS_UNGUARDED =
  `${PREFIX}: invalid configuration of ResilienceEndpointsModule options 'status': the status routes serve every instance's ` +
  `config, the instance inventory and the outbox state, so they need 'guards' (e.g. guards: [OperatorGuard]); ` +
  `to serve them to anyone who can reach the port, say 'public: true'`;

/** The status routes were given guards and `public: true`, which contradict each other. */
export const STATUS_PUBLIC_AND_GUARDED =
  `${PREFIX}: invalid configuration of ResilienceEndpointsModule options 'status': 'public: true' serves the status routes ` +
  `unguarded, yet 'guards' were given; keep one of them`;

/** A status route names a resource that does not exist. */
export const UNKNOWN_STATUS_ROUTE = (resource: string, known: readonly string[]): string =>
  `${PREFIX}: no status route '${resource}'; the routes are ${known.map((r) => `'${r}'`).join(', ')}, 'loadshedding', 'faults', 'faultevents' and 'outbox'`;

/** `GET …/:name/keys` on a resource that lists events, not instances. */
export const NO_KEYS_ROUTE = (resource: string, keyed: readonly string[]): string =>
  `${PREFIX}: '${resource}' lists events, which have no keys; the keys of an instance are at ${keyed.map((r) => `'${r}/:name/keys'`).join(', ')}`;

/** A status route names an instance that does not exist. */
export const UNKNOWN_STATUS_INSTANCE = (policy: string, name: string): string =>
  `${PREFIX}: no ${policy} instance named '${name}'`;

/** A config route names a resource that has no config to change. */
export const UNKNOWN_CONFIG_ROUTE = (resource: string, known: readonly string[]): string =>
  `${PREFIX}: no config route for '${resource}'; the routes are ${known.map((r) => `'${r}/{name}/config'`).join(', ')}`;

/** The body of a config change is not an object of settings. */
export const CONFIG_BODY_NOT_AN_OBJECT = (policy: string, name: string): string =>
  `${PREFIX}: the body must be a JSON object of the ${policy} instance '${name}' settings to change, e.g. { "maxAttempts": 5 }`;

/** The body of a breaker state change has no valid `updateState`. */
export const INVALID_UPDATE_STATE = (value: unknown, allowed: readonly string[]): string =>
  `${PREFIX}: key 'updateState' must be one of ${allowed.map((s) => `'${s}'`).join(', ')}, got ${JSON.stringify(value) ?? 'undefined'}`;

export { BREAKER_TRANSITION } from '../policies/circuit-breaker/circuit-breaker.messages';
export { BUDGET_EXHAUSTED, BUDGET_RECOVERED } from '../policies/retry/retry.messages';
export { BULKHEAD_RECOVERED, BULKHEAD_SATURATED } from '../policies/bulkhead/bulkhead.messages';
export {
  RATE_LIMITER_STORE_ANSWERING,
  RATE_LIMITER_STORE_FAILING,
} from '../policies/rate-limiter/rate-limiter.messages';

/** The first idempotency store failure of an episode: the store's own text, which clients never see. */
export const IDEMPOTENCY_STORE_FAILING = (detail: string, reason: string | undefined): string =>
  `${detail}${reason === undefined ? '' : ` (the store said: ${reason})`}; requests get 503 until it answers again`;

/** An episode of idempotency store failures ended. */
export const IDEMPOTENCY_STORE_ANSWERING = (failures: number, ms: number): string =>
  `idempotency store answers again; ${failures} store calls failed over ${formatMs(ms)} ms`;
