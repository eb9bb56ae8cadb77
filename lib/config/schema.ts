import { ErrorClassOrName } from '../error-matcher';
import { isForeignJavaName } from '../java-exceptions';
import {
  BASE_CONFIG_CYCLE,
  ConfigPlace,
  DOTTED_NAME_HINT,
  IGNORED_PROPERTY,
  INVALID_VALUE,
  LEGACY_PROPERTY,
  NOT_AN_OBJECT,
  UNKNOWN_BASE_CONFIG,
  UNKNOWN_KEY,
  UNMATCHED_EXCEPTIONS,
  UNSUPPORTED_PROPERTY,
  instancePlace,
} from './config.messages';
import { parseDuration } from './duration';
import { findKey, isPlainObject } from './relaxed-binding';
import { IGNORED_INSTANCE_PROPERTIES, IGNORED_SECTION_PROPERTIES, LEGACY_PROPERTIES } from './resilience4j-properties';

/** How one config key is read and checked. */
export type FieldSpec =
  | { kind: 'duration'; positive?: boolean }
  | { kind: 'integer'; min: number; max?: number }
  | { kind: 'number'; min: number; max?: number; exclusiveMin?: boolean }
  | { kind: 'percent' }
  | { kind: 'boolean' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'errors' }
  | { kind: 'function' }
  | { kind: 'object'; fields: Record<string, FieldSpec> };

/** The schema of one policy's settings. */
export interface PolicySchema<T extends object> {
  /** The policy's section name, e.g. `retry`. */
  readonly policy: string;
  readonly fields: { readonly [K in keyof T]-?: FieldSpec };
  readonly defaults: T;
  /** Resilience4j properties accepted with a one-time warning. */
  readonly unsupported: readonly string[];
  /** Cross-field checks on a resolved config; throws with a message naming the key. */
  readonly check?: (config: T, place: ConfigPlace) => void;
}

/** A policy section of the module options: named configs and instances. */
export interface PolicySection<I> {
  /** Named configs; `default` is merged into every instance. */
  configs?: Record<string, I & { baseConfig?: string }>;
  /** Named instances; `baseConfig` picks a config other than `default`. */
  instances?: Record<string, I & { baseConfig?: string }>;
}

/** The resolved configs and instances of one policy. */
export interface ResolvedSection<T> {
  readonly defaultConfig: T;
  readonly instances: ReadonlyMap<string, T>;
}

/** `max-attempts` → `maxAttempts`. */
export function camelKey(key: string): string {
  return key.replace(/[-_.]([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
}

const BASE_CONFIG = 'baseConfig';

/** What an exception list that matches nothing would do, by key. */
const UNMATCHED_CONSEQUENCE: Readonly<Record<string, string>> = {
  recordExceptions: 'every error would count as a success, so the breaker would never open',
  ignoreExceptions: 'no error would be ignored',
  retryExceptions:
    'only the default retryable set (timeouts, connection errors, HTTP 429/502/503/504) would be retried',
};

/** Warns about the names of an exception list that stand for nothing in Node, and says what the list would do if none matches. */
function checkExceptionNames(
  list: readonly ErrorClassOrName[],
  place: ConfigPlace,
  key: string,
  rawKey: string,
  warn: (message: string) => void,
): void {
  const foreign = list.filter((e): e is string => typeof e === 'string' && isForeignJavaName(e));
  if (foreign.length === 0) return;
  warn(
    UNMATCHED_EXCEPTIONS(
      place,
      rawKey,
      foreign,
      foreign.length === list.length ? UNMATCHED_CONSEQUENCE[key] : undefined,
    ),
  );
}

/** A Resilience4j property with no effect here (one warning) or renamed since 0.x (an error); false when `rawKey` is neither. */
function handleResilience4jKey(
  policy: string,
  rawKey: string,
  place: ConfigPlace,
  warn: (message: string) => void,
  table = IGNORED_INSTANCE_PROPERTIES,
): boolean {
  const legacy = LEGACY_PROPERTIES[policy];
  const renamed = legacy && findKey(rawKey, Object.keys(legacy));
  if (renamed !== undefined) throw new Error(LEGACY_PROPERTY(place, rawKey, legacy[renamed]));
  const ignored = table[policy];
  const known = ignored && findKey(rawKey, Object.keys(ignored));
  if (known === undefined) return false;
  warn(IGNORED_PROPERTY(place, rawKey, ignored[known]));
  return true;
}

/**
 * Reads the partial settings of one config or instance: every key is
 * normalised to camelCase and checked against the schema.
 */
export function readPartial<T extends object>(
  schema: PolicySchema<T>,
  raw: unknown,
  place: ConfigPlace,
  warn: (message: string) => void,
  allowBase = true,
): Partial<T> & { baseConfig?: string } {
  if (raw === null || raw === undefined) return {};
  if (!isPlainObject(raw)) throw new Error(NOT_AN_OBJECT(place, raw));
  const out: Record<string, unknown> = {};
  const fields = schema.fields as Record<string, FieldSpec>;
  const known = allowBase ? [...Object.keys(fields), BASE_CONFIG] : Object.keys(fields);
  for (const [rawKey, value] of Object.entries(raw)) {
    const key = findKey(rawKey, known);
    if (key === BASE_CONFIG) {
      if (typeof value !== 'string' || value.length === 0)
        throw new Error(INVALID_VALUE(place, rawKey, 'a config name', value));
      out.baseConfig = value;
      continue;
    }
    if (key === undefined) {
      if (handleResilience4jKey(schema.policy, rawKey, place, warn)) continue;
      if (findKey(rawKey, schema.unsupported) !== undefined) {
        warn(UNSUPPORTED_PROPERTY(place, rawKey));
        continue;
      }
      // Spring splits a dotted map key too, so 'payments.v2' arrives as instance 'payments' with a key 'v2'.
      throw new Error(UNKNOWN_KEY(place, rawKey, known) + (isPlainObject(value) ? DOTTED_NAME_HINT : ''));
    }
    if (key in out)
      throw new Error(INVALID_VALUE(place, rawKey, `given once (also given as another spelling of '${key}')`, value));
    if (value === undefined) continue;
    const spec = fields[key];
    out[key] = readField(spec, value, place, rawKey);
    if (spec.kind === 'errors') checkExceptionNames(out[key] as ErrorClassOrName[], place, key, rawKey, warn);
  }
  return out as Partial<T> & { baseConfig?: string };
}

function readField(spec: FieldSpec, value: unknown, place: ConfigPlace, key: string): unknown {
  const bad = (expected: string): never => {
    throw new Error(INVALID_VALUE(place, key, expected, value));
  };
  switch (spec.kind) {
    case 'duration': {
      const ms = parseDuration(value);
      if (ms === undefined) return bad('a non-negative duration (ms number or "250ms", "2s", "1m", "24h")');
      if (spec.positive && ms === 0) return bad('a positive duration');
      return ms;
    }
    case 'integer': {
      const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
      const range = spec.max === undefined ? `>= ${spec.min}` : `between ${spec.min} and ${spec.max}`;
      if (
        typeof n !== 'number' ||
        !Number.isSafeInteger(n) ||
        n < spec.min ||
        (spec.max !== undefined && n > spec.max)
      ) {
        return bad(`an integer ${range}`);
      }
      return n;
    }
    case 'number': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      const low = spec.exclusiveMin ? `> ${spec.min}` : `>= ${spec.min}`;
      const expected = spec.max === undefined ? `a number ${low}` : `a number ${low} and <= ${spec.max}`;
      if (typeof n !== 'number' || !Number.isFinite(n)) return bad(expected);
      if (spec.exclusiveMin ? n <= spec.min : n < spec.min) return bad(expected);
      if (spec.max !== undefined && n > spec.max) return bad(expected);
      return n;
    }
    case 'percent': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > 100) return bad('a percentage in (0, 100]');
      return n;
    }
    case 'boolean': {
      const text = typeof value === 'string' ? value.trim().toLowerCase() : value;
      if (text === true || text === 'true') return true;
      if (text === false || text === 'false') return false;
      return bad('true or false');
    }
    case 'enum': {
      const match = typeof value === 'string' ? findKey(value.trim(), spec.values) : undefined;
      if (match === undefined) return bad(`one of ${spec.values.map((v) => `'${v}'`).join(', ')}`);
      return match;
    }
    case 'errors': {
      // Spring binds a comma-separated string to a list.
      const list =
        typeof value === 'string'
          ? value.split(',').filter((e) => e.trim() !== '')
          : typeof value === 'function'
            ? [value]
            : value;
      if (
        !Array.isArray(list) ||
        list.some((e) => !(typeof e === 'function' || (typeof e === 'string' && e.trim() !== '')))
      ) {
        return bad('a list of error classes or class names');
      }
      return list.map((e) => (typeof e === 'string' ? e.trim() : e)) as ErrorClassOrName[];
    }
    case 'function': {
      if (typeof value !== 'function') return bad('a function');
      return value;
    }
    case 'object': {
      if (!isPlainObject(value)) return bad('an object');
      const out: Record<string, unknown> = {};
      const known = Object.keys(spec.fields);
      for (const [rawSub, sub] of Object.entries(value)) {
        const subKey = findKey(rawSub, known);
        if (subKey === undefined) throw new Error(UNKNOWN_KEY(place, `${key}.${rawSub}`, known));
        out[subKey] = readField(spec.fields[subKey], sub, place, `${key}.${rawSub}`);
      }
      for (const k of known) if (!(k in out)) bad(`an object with '${k}'`);
      return out;
    }
  }
}

/** Keys of a policy section; `backends` and `limiters` are Resilience4j's older names of `instances`. */
const SECTION_KEYS = ['configs', 'instances', 'backends', 'limiters'];

/**
 * Resolves a policy section: `configs.default` (or `baseConfig`) is merged
 * into every instance, over the schema's defaults, and each result checked.
 */
export function resolveSection<T extends object>(
  schema: PolicySchema<T>,
  raw: unknown,
  warn: (message: string) => void,
): ResolvedSection<T> {
  const section = raw ?? {};
  if (!isPlainObject(section)) throw new Error(NOT_AN_OBJECT(schema.policy, section));
  // Maps, not objects: an instance may be named `__proto__`, which assigning into an object would swallow.
  const configsRaw = new Map<string, unknown>();
  const instancesRaw = new Map<string, unknown>();
  for (const [rawKey, value] of Object.entries(section)) {
    const key = findKey(rawKey, SECTION_KEYS);
    if (key === undefined) {
      if (handleResilience4jKey(schema.policy, rawKey, schema.policy, warn, IGNORED_SECTION_PROPERTIES)) continue;
      throw new Error(UNKNOWN_KEY(schema.policy, rawKey, ['configs', 'instances']));
    }
    const target = key === 'configs' ? configsRaw : instancesRaw;
    if (value === null || value === undefined) continue;
    if (!isPlainObject(value)) throw new Error(NOT_AN_OBJECT(`${schema.policy}.${rawKey}`, value));
    for (const [name, settings] of Object.entries(value)) {
      // 'backends' and 'limiters' are Resilience4j's older names of 'instances': one instance may not be in two of them.
      if (target.has(name))
        throw new Error(
          INVALID_VALUE(
            `${schema.policy} ${key === 'configs' ? 'config' : 'instance'} '${name}'`,
            rawKey,
            'declared once (it is also under another of instances, backends, limiters)',
            settings,
          ),
        );
      target.set(name, settings);
    }
  }

  const partialConfigs = new Map<string, Partial<T> & { baseConfig?: string }>();
  for (const [name, value] of configsRaw) {
    partialConfigs.set(name, readPartial(schema, value, instancePlace(schema.policy, 'config', name), warn));
  }
  const resolvedConfigs = new Map<string, T>();
  const resolveConfig = (name: string, chain: string[]): T => {
    const done = resolvedConfigs.get(name);
    if (done) return done;
    if (chain.includes(name)) throw new Error(BASE_CONFIG_CYCLE(schema.policy, [...chain, name]));
    const partial: Partial<T> & { baseConfig?: string } = partialConfigs.get(name) ?? {};
    const baseName = partial.baseConfig ?? (name === 'default' ? undefined : 'default');
    if (partial.baseConfig !== undefined && !partialConfigs.has(partial.baseConfig)) {
      throw new Error(
        UNKNOWN_BASE_CONFIG(instancePlace(schema.policy, 'config', name), partial.baseConfig, [
          ...partialConfigs.keys(),
        ]),
      );
    }
    const base = baseName === undefined ? schema.defaults : resolveConfig(baseName, [...chain, name]);
    const merged = merge(base, partial);
    resolvedConfigs.set(name, merged);
    return merged;
  };
  for (const name of partialConfigs.keys()) resolveConfig(name, []);
  const defaultConfig = resolveConfig('default', []);
  if (partialConfigs.has('default')) schema.check?.(defaultConfig, instancePlace(schema.policy, 'config', 'default'));

  const instances = new Map<string, T>();
  for (const [name, value] of instancesRaw) {
    const place = instancePlace(schema.policy, 'instance', name);
    const partial = readPartial(schema, value, place, warn);
    let base = defaultConfig;
    if (partial.baseConfig !== undefined) {
      if (!partialConfigs.has(partial.baseConfig)) {
        throw new Error(UNKNOWN_BASE_CONFIG(place, partial.baseConfig, [...partialConfigs.keys()]));
      }
      base = resolveConfig(partial.baseConfig, []);
    }
    const merged = merge(base, partial);
    schema.check?.(merged, place);
    instances.set(name, merged);
  }
  return { defaultConfig, instances };
}

/** Applies decorator overrides to an instance config, checked like the config itself. */
export function applyOverrides<T extends object>(
  schema: PolicySchema<T>,
  base: T,
  overrides: unknown,
  place: ConfigPlace,
  warn: (message: string) => void,
): T {
  const merged = merge(base, readPartial(schema, overrides, place, warn, false));
  schema.check?.(merged, place);
  return merged;
}

function merge<T extends object>(base: T, partial: Partial<T> & { baseConfig?: string }): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(partial)) if (key !== BASE_CONFIG) out[key] = value;
  return Object.freeze(out) as T;
}
