import { booleanOption, GivenOptions } from '../../config/option-readers';

/** Module option `tracing`: resilience events on OpenTelemetry spans. */
export interface TracingOptions {
  /**
   * `true`: record (and fail startup without `@opentelemetry/api`); `false`:
   * never. Default: record when `@opentelemetry/api` is installed and a
   * tracer provider is registered when the application starts.
   */
  enabled?: boolean;
  /** A child span around each attempt of a decorated method (`<Class.method> attempt`). Default false. */
  spanPerAttempt?: boolean;
}

/** The resolved `tracing` option. */
export interface ResolvedTracingOptions {
  /** `auto`: record when a tracer provider is registered at bootstrap. */
  readonly enabled: boolean | 'auto';
  /** A child span around each attempt. */
  readonly spanPerAttempt: boolean;
}

const PLACE = 'tracing options';

/** Reads module option `tracing` (`true`/`false` stand for `{ enabled }`); throws naming the key and the bad value. */
export function readTracingOptions(raw: unknown): ResolvedTracingOptions {
  if (raw === undefined || raw === null) return { enabled: 'auto', spanPerAttempt: false };
  if (typeof raw === 'boolean') return { enabled: raw, spanPerAttempt: false };
  const given = new GivenOptions(raw, PLACE, ['enabled', 'spanPerAttempt']);
  return {
    enabled: given.read('enabled', booleanOption) ?? 'auto',
    spanPerAttempt: given.read('spanPerAttempt', booleanOption) ?? false,
  };
}
