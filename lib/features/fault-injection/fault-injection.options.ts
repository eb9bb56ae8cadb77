import type { Duration } from '../../config/duration';
import {
  booleanOption,
  durationOption,
  GivenOptions,
  invalidOption,
  numberOption,
  OptionReader,
  UnknownKeys,
} from '../../config/option-readers';
import type { ErrorClass } from '../../config/error-matcher';
import { checkInstanceName } from '../../kernel/instance-name';

/**
 * What an injected error is: an error class name (`'IOException'`: an error
 * of a class of that name), a Node error code (`'ECONNREFUSED'`: an error
 * with that `code`), an HTTP status (`503`: an error with that `status`),
 * or an error class (an instance of it).
 */
export type InjectedError = string | number | ErrorClass<Error>;

/**
 * The faults of one instance name, each at a rate in [0, 1]: `latency`
 * delays the call, `error` fails it instead, `outcome` answers `value`
 * instead of calling.
 */
export interface FaultSpec {
  /** Delay the call by `duration` (it then runs, unless its attempt's signal aborts first). */
  readonly latency?: { readonly rate: number; readonly duration: Duration };
  /** Fail the call with an error instead of calling. */
  readonly error?: { readonly rate: number; readonly error: InjectedError };
  /** Answer `value` instead of calling (an HTTP 500 response object, a stale value…). */
  readonly outcome?: { readonly rate: number; readonly value: unknown };
}

/** Module option `faultInjection`: off unless `enabled`, and refused in production unless allowed. */
export interface FaultInjectionOptions {
  /** Turns fault injection on (the configured faults and `FaultInjector.inject`). Default false. */
  readonly enabled?: boolean;
  /** Lets `enabled: true` start when `NODE_ENV` names production (`production` or `prod`, any case, trimmed). Default false. */
  readonly allowInProduction?: boolean;
  /** The faults of each instance name, active from startup. */
  readonly instances?: Readonly<Record<string, FaultSpec>>;
}

/** A validated fault: durations in ms. */
export interface ResolvedFault {
  /** Delay the call by `duration` ms, at `rate`. */
  readonly latency?: { readonly rate: number; readonly duration: number };
  /** Fail the call with `error` instead of calling, at `rate`. */
  readonly error?: { readonly rate: number; readonly error: InjectedError };
  /** Answer `value` instead of calling, at `rate`. */
  readonly outcome?: { readonly rate: number; readonly value: unknown };
}

/** Validated `faultInjection` options. */
export interface ResolvedFaultInjection {
  readonly enabled: boolean;
  readonly allowInProduction: boolean;
  readonly instances: ReadonlyMap<string, ResolvedFault>;
}

const rateOption = numberOption({ min: 0, max: 1 }, 'a rate in [0, 1]');

const injectedErrorOption: OptionReader<InjectedError> = (value, place, key) => {
  if (typeof value === 'function') return value as ErrorClass<Error>;
  if (typeof value === 'string' && value.trim() !== '') return value.trim();
  if (typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599) return value;
  return invalidOption(
    place,
    key,
    "an error class name ('IOException'), a Node error code ('ECONNREFUSED'), an HTTP status 400-599 or an error class",
    value,
  );
};

/**
 * Reads one instance's faults, naming `place` (`faultInjection.instances.inventory`)
 * in errors; an unknown key fails unless `unknownKeys` says to warn.
 */
export function readFault(raw: unknown, place: string, unknownKeys?: UnknownKeys): ResolvedFault {
  const given = new GivenOptions(raw, place, ['latency', 'error', 'outcome'], { unknownKeys });
  const latency = given.nested('latency', ['rate', 'duration']);
  const error = given.nested('error', ['rate', 'error']);
  const outcome = given.nested('outcome', ['rate', 'value']);
  const required = <T>(part: GivenOptions, key: string, reader: OptionReader<T>): T =>
    part.read(key, reader) ?? invalidOption(part.place, key, 'given', undefined);
  return {
    latency: latency && {
      rate: required(latency, 'rate', rateOption),
      duration: required(latency, 'duration', durationOption()),
    },
    error: error && { rate: required(error, 'rate', rateOption), error: required(error, 'error', injectedErrorOption) },
    outcome: outcome && { rate: required(outcome, 'rate', rateOption), value: outcome.raw('value') },
  };
}

/** Validates the module option `faultInjection` (absent: off); an unknown key fails unless `unknownKeys` says to warn. */
export function readFaultInjectionOptions(raw: unknown, unknownKeys?: UnknownKeys): ResolvedFaultInjection {
  if (raw === undefined) return { enabled: false, allowInProduction: false, instances: new Map() };
  const place = 'faultInjection options';
  const given = new GivenOptions(raw, place, ['enabled', 'allowInProduction', 'instances'], { unknownKeys });
  const instances = new Map<string, ResolvedFault>();
  const listed = given.raw('instances');
  if (listed !== undefined) {
    if (listed === null || typeof listed !== 'object' || Array.isArray(listed))
      invalidOption(place, given.written('instances'), 'an object of instance names', listed);
    for (const [name, fault] of Object.entries(listed))
      instances.set(
        checkInstanceName(name, 'faultInjection.instances'),
        readFault(fault, `faultInjection.instances.${name}`, unknownKeys),
      );
  }
  return {
    enabled: given.read('enabled', booleanOption) ?? false,
    allowInProduction: given.read('allowInProduction', booleanOption) ?? false,
    instances,
  };
}
