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
  /**
   * Record a failed attempt's error message and stack on its span's
   * `exception` event. Default false: the event gives the error's class,
   * `code` and HTTP status only, since messages often carry request data
   * (card numbers, tokens, addresses) that a trace backend should not keep.
   */
  recordExceptionMessages?: boolean;
}

/** The resolved `tracing` option. */
export interface ResolvedTracingOptions {
  /** `auto`: record when a tracer provider is registered at bootstrap. */
  readonly enabled: boolean | 'auto';
  /** A child span around each attempt. */
  readonly spanPerAttempt: boolean;
  /** A failed attempt's message and stack are recorded on its span. */
  readonly recordExceptionMessages: boolean;
}

const PLACE = 'tracing options';

/** Reads module option `tracing` (`true`/`false` stand for `{ enabled }`); throws naming the key and the bad value. */
export function readTracingOptions(raw: unknown): ResolvedTracingOptions {
  if (raw === undefined || raw === null)
    return { enabled: 'auto', spanPerAttempt: false, recordExceptionMessages: false };
  if (typeof raw === 'boolean') return { enabled: raw, spanPerAttempt: false, recordExceptionMessages: false };
  const given = new GivenOptions(raw, PLACE, ['enabled', 'spanPerAttempt', 'recordExceptionMessages']);
  return {
    enabled: given.read('enabled', booleanOption) ?? 'auto',
    spanPerAttempt: given.read('spanPerAttempt', booleanOption) ?? false,
    recordExceptionMessages: given.read('recordExceptionMessages', booleanOption) ?? false,
  };
}
