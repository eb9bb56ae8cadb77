import type { ErrorClassOrName } from './error-matcher';
import { ConfigPlace, IGNORED_UNKNOWN_KEY, INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from './config.messages';
import { parseDuration } from './duration';
import { findKey } from './relaxed-binding';

/**
 * Reads one option value. A bad value throws an error naming `place`, the
 * key as written and the value.
 */
export type OptionReader<T> = (value: unknown, place: ConfigPlace, key: string) => T;

/** Throws the error of a bad option value: where it is, its key as written, what it must be and what it is. */
export function invalidOption(place: ConfigPlace, key: string, expected: string, value: unknown): never {
  throw new Error(INVALID_VALUE(place, key, expected, value));
}

/** `true` or `false`, also as text in any case (Spring binds text). */
export const booleanOption: OptionReader<boolean> = (value, place, key) => {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : value;
  if (text === true || text === 'true') return true;
  if (text === false || text === 'false') return false;
  return invalidOption(place, key, 'true or false', value);
};

/** A safe integer in `[min, max]`, also as decimal digits. */
export function integerOption(
  min: number,
  max?: number,
  expected = max === undefined ? `an integer >= ${min}` : `an integer between ${min} and ${max}`,
): OptionReader<number> {
  return (value, place, key) => {
    const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || (max !== undefined && n > max))
      return invalidOption(place, key, expected, value);
    return n;
  };
}

/** The bounds of a {@link numberOption}. */
export interface NumberRange {
  readonly min: number;
  readonly max?: number;
  /** `min` itself is refused. */
  readonly exclusiveMin?: boolean;
  /** `max` itself is refused. */
  readonly exclusiveMax?: boolean;
}

/** A finite number within `range`, also as numeric text. */
export function numberOption(range: NumberRange, expected = rangeText(range)): OptionReader<number> {
  const { min, max, exclusiveMin, exclusiveMax } = range;
  return (value, place, key) => {
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (
      typeof n !== 'number' ||
      !Number.isFinite(n) ||
      (exclusiveMin ? n <= min : n < min) ||
      (max !== undefined && (exclusiveMax ? n >= max : n > max))
    )
      return invalidOption(place, key, expected, value);
    return n;
  };
}

function rangeText({ min, max, exclusiveMin, exclusiveMax }: NumberRange): string {
  const low = `a number ${exclusiveMin ? '>' : '>='} ${min}`;
  return max === undefined ? low : `${low} and ${exclusiveMax ? '<' : '<='} ${max}`;
}

/** A percentage in (0, 100]. */
export const percentOption: OptionReader<number> = numberOption(
  { min: 0, exclusiveMin: true, max: 100 },
  'a percentage in (0, 100]',
);

const DURATION = 'a non-negative duration (ms number or "250ms", "2s", "1m", "24h")';

/**
 * A {@link Duration} in ms. `positive` refuses zero; `expected` replaces
 * the wording of both errors (an unreadable value and a zero).
 */
export function durationOption(
  options: { readonly positive?: boolean; readonly expected?: string } = {},
): OptionReader<number> {
  const { positive = false, expected } = options;
  return (value, place, key) => {
    const ms = parseDuration(value);
    if (ms === undefined) return invalidOption(place, key, expected ?? DURATION, value);
    if (positive && ms === 0) return invalidOption(place, key, expected ?? 'a positive duration', value);
    return ms;
  };
}

/** One of `values`, matched in Spring's relaxed form (`count-based`, `COUNT_BASED`); answers the listed spelling. */
export function enumOption<V extends string>(
  values: readonly V[],
  expected = `one of ${values.map((v) => `'${v}'`).join(', ')}`,
): OptionReader<V> {
  return (value, place, key) => {
    const match = typeof value === 'string' ? findKey(value.trim(), values) : undefined;
    return match ?? invalidOption(place, key, expected, value);
  };
}

/** Whether `value` is an HTTP header name (an RFC 9110 token). */
export function isHeaderName(value: unknown): value is string {
  return typeof value === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value);
}

/** An HTTP header name, as written. */
export const headerNameOption: OptionReader<string> = (value, place, key) =>
  isHeaderName(value) ? value : invalidOption(place, key, 'an HTTP header name', value);

/** A function. */
export function functionOption<F extends (...args: never[]) => unknown>(): OptionReader<F> {
  return (value, place, key) =>
    typeof value === 'function' ? (value as F) : invalidOption(place, key, 'a function', value);
}

/**
 * A list of error classes or class names. With `spring`, one class, or
 * names separated by commas, count too (Spring binds them so); a
 * decorator's options, typed in code, take a list only.
 */
export function errorListOption(spring: boolean): OptionReader<ErrorClassOrName[]> {
  return (value, place, key) => {
    const list: unknown =
      spring && typeof value === 'string'
        ? value.split(',').filter((e) => e.trim() !== '')
        : spring && typeof value === 'function'
          ? [value]
          : value;
    if (!Array.isArray(list) || !list.every(isErrorClassOrName))
      return invalidOption(place, key, 'a list of error classes or class names', value);
    return list.map((e) => (typeof e === 'string' ? e.trim() : e));
  };
}

function isErrorClassOrName(e: unknown): e is ErrorClassOrName {
  return typeof e === 'function' || (typeof e === 'string' && e.trim() !== '');
}

/**
 * A nested object of settings read in its parent's place, every one of
 * `fields` required; its keys are named `key.field` in messages.
 */
export function objectOption(fields: Readonly<Record<string, OptionReader<unknown>>>): OptionReader<object> {
  const known = Object.keys(fields);
  return (value, place, key) => {
    if (!isOptionsObject(value)) return invalidOption(place, key, 'an object', value);
    const given = new GivenOptions(value, place, known, { prefix: `${key}.` });
    const out: Record<string, unknown> = {};
    for (const field of known) out[field] = given.read(field, fields[field]);
    for (const field of known)
      if (out[field] === undefined) invalidOption(place, key, `an object with '${field}'`, value);
    return out;
  };
}

/** An object of settings: any object but an array (a class instance counts, read by its own properties). */
function isOptionsObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** How {@link GivenOptions} reads the keys of an object. */
export interface GivenOptionsBinding {
  /** Written before each key in messages (`budget.` for a nested object read in its parent's place). */
  readonly prefix?: string;
  /**
   * Called with a key that is not known; true when it is accepted anyway
   * (a Resilience4j property warned about). Without it, or when it answers
   * false, the key is an error suggesting the closest known one.
   */
  readonly onUnknown?: (rawKey: string, value: unknown) => boolean;
  /**
   * What a key that is not known (and not accepted by `onUnknown`) does:
   * fail (`error`, the default) or, with `warn`, be ignored with one
   * warning; nested objects read through {@link GivenOptions.nested} follow it too.
   */
  readonly unknownKeys?: UnknownKeys;
}

/** What an unknown key does: the module option `unknownKeys`, and where its warnings go. */
export interface UnknownKeys {
  readonly rule: 'error' | 'warn';
  readonly warn: (message: string) => void;
}

/**
 * The settings of one options object, each key matched to a known one in
 * Spring's relaxed form (camelCase, kebab-case, snake_case, any case). An
 * unknown key, or one key given under two spellings, is an error naming
 * `place` and the key as written.
 */
export class GivenOptions {
  private readonly given = new Map<string, { readonly rawKey: string; readonly value: unknown }>();
  private readonly prefix: string;
  private readonly unknownKeys: UnknownKeys | undefined;

  /**
   * @param raw - the object as written
   * @param place - where it sits, for messages (`idempotency options`)
   * @param known - its keys, in camelCase
   */
  constructor(
    raw: unknown,
    readonly place: ConfigPlace,
    known: readonly string[],
    binding: GivenOptionsBinding = {},
  ) {
    this.prefix = binding.prefix ?? '';
    this.unknownKeys = binding.unknownKeys;
    if (!isOptionsObject(raw)) throw new Error(NOT_AN_OBJECT(place, raw));
    for (const [rawKey, value] of Object.entries(raw)) {
      const key = findKey(rawKey, known);
      if (key === undefined) {
        if (binding.onUnknown?.(rawKey, value)) continue;
        if (this.unknownKeys?.rule !== 'warn') throw new Error(UNKNOWN_KEY(place, this.prefix + rawKey, known));
        this.unknownKeys.warn(IGNORED_UNKNOWN_KEY(place, this.prefix + rawKey, known));
        continue;
      }
      if (this.given.has(key))
        invalidOption(place, rawKey, `given once (also given as another spelling of '${key}')`, value);
      this.given.set(key, { rawKey, value });
    }
  }

  /** The known keys given, in the order written. */
  keys(): string[] {
    return [...this.given.keys()];
  }

  /** Whether `key` was given (with a value other than `undefined`). */
  has(key: string): boolean {
    return this.given.get(key)?.value !== undefined;
  }

  /** `key` as written, for messages (the known spelling when it was not given). */
  written(key: string): string {
    return this.prefix + (this.given.get(key)?.rawKey ?? key);
  }

  /** The value of `key` as written, not checked. */
  raw(key: string): unknown {
    return this.given.get(key)?.value;
  }

  /** The value of `key` checked by `reader`, or `undefined` when it is not given. */
  read<T>(key: string, reader: OptionReader<T>): T | undefined {
    const entry = this.given.get(key);
    if (entry === undefined || entry.value === undefined) return undefined;
    return reader(entry.value, this.place, this.prefix + entry.rawKey);
  }

  /**
   * A nested object of settings (`health.fallbackShare`), read in its own
   * place `<place> '<key as written>'`; `undefined` when it is not given.
   */
  nested(key: string, known: readonly string[]): GivenOptions | undefined {
    if (!this.has(key)) return undefined;
    return new GivenOptions(this.raw(key), `${this.place} '${this.written(key)}'`, known, {
      unknownKeys: this.unknownKeys,
    });
  }
}
