import { ErrorClassOrName } from '../error-matcher';
import {
  BASE_CONFIG_CYCLE,
  ConfigPlace,
  INVALID_VALUE,
  NOT_AN_OBJECT,
  UNKNOWN_BASE_CONFIG,
  UNKNOWN_KEY,
  UNSUPPORTED_PROPERTY,
  instancePlace,
} from './config.messages';
import { parseDuration } from './duration';

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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
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
    const key = camelKey(rawKey);
    if (key === BASE_CONFIG && allowBase) {
      if (typeof value !== 'string' || value.length === 0) throw new Error(INVALID_VALUE(place, rawKey, 'a config name', value));
      out.baseConfig = value;
      continue;
    }
    const spec = fields[key];
    if (spec === undefined) {
      if (schema.unsupported.includes(key)) {
        warn(UNSUPPORTED_PROPERTY(place, rawKey));
        continue;
      }
      throw new Error(UNKNOWN_KEY(place, rawKey, known));
    }
    if (value === undefined) continue;
    out[key] = readField(spec, value, place, rawKey);
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
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < spec.min || (spec.max !== undefined && n > spec.max)) {
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
      if (value === true || value === 'true') return true;
      if (value === false || value === 'false') return false;
      return bad('true or false');
    }
    case 'enum': {
      const match = typeof value === 'string' ? spec.values.find((v) => v.toLowerCase() === value.toLowerCase()) : undefined;
      if (match === undefined) return bad(`one of ${spec.values.map((v) => `'${v}'`).join(', ')}`);
      return match;
    }
    case 'errors': {
      const list = typeof value === 'string' || typeof value === 'function' ? [value] : value;
      if (!Array.isArray(list) || list.some((e) => !(typeof e === 'function' || (typeof e === 'string' && e.trim() !== '')))) {
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
        const subKey = camelKey(rawSub);
        const subSpec = spec.fields[subKey];
        if (subSpec === undefined) throw new Error(UNKNOWN_KEY(place, `${key}.${rawSub}`, known));
        out[subKey] = readField(subSpec, sub, place, `${key}.${rawSub}`);
      }
      for (const k of known) if (!(k in out)) bad(`an object with '${k}'`);
      return out;
    }
  }
}

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
    const key = camelKey(rawKey);
    const target = key === 'configs' ? configsRaw : key === 'instances' ? instancesRaw : undefined;
    if (target === undefined) throw new Error(UNKNOWN_KEY(schema.policy, rawKey, ['configs', 'instances']));
    if (value === null || value === undefined) continue;
    if (!isPlainObject(value)) throw new Error(NOT_AN_OBJECT(`${schema.policy}.${key}`, value));
    for (const [name, settings] of Object.entries(value)) target.set(name, settings);
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
      throw new Error(UNKNOWN_BASE_CONFIG(instancePlace(schema.policy, 'config', name), partial.baseConfig, [...partialConfigs.keys()]));
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
