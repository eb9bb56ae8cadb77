import { bindErrorNames, ErrorClassOrName, ErrorNames } from './error-matcher';
import type { Duration } from './duration';
import { checkInstanceName } from '../kernel/instance-name';
import {
  BASE_CONFIG_CYCLE,
  ConfigPlace,
  DOTTED_NAME_HINT,
  IGNORED_LEGACY_PROPERTY,
  IGNORED_PROPERTY,
  IGNORED_UNKNOWN_KEY,
  INVALID_VALUE,
  SPRING_IGNORED_PROPERTY,
  LEGACY_PROPERTY,
  NAME_STRIPPED,
  NAMES_MERGED,
  OWN_NAME_AS_BASE_CONFIG,
  NOT_AN_OBJECT,
  UNKNOWN_BASE_CONFIG,
  UNKNOWN_KEY,
  UNMATCHED_EXCEPTIONS,
  instancePlace,
} from './config.messages';
import {
  booleanOption,
  durationOption,
  enumOption,
  errorListOption,
  functionOption,
  GivenOptions,
  integerOption,
  invalidOption,
  numberOption,
  objectOption,
  OptionReader,
  percentOption,
} from './option-readers';
import { bracketedName, findKey, mergeProperties, setOwn } from './relaxed-binding';
import { isPlainObject } from './plain-object';
import {
  IGNORED_INSTANCE_PROPERTIES,
  IGNORED_SECTION_PROPERTIES,
  LEGACY_PROPERTIES,
  SPRING_IGNORED_PROPERTIES,
} from './resilience4j-properties';

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
  | { kind: 'object'; fields: Record<string, FieldSpec> }
  | { kind: 'custom'; read: OptionReader<unknown> };

/** The schema of one policy's settings. */
export interface PolicySchema<T extends object> {
  /** The policy's section name, e.g. `retry`. */
  readonly policy: string;
  readonly fields: { readonly [K in keyof T]-?: FieldSpec };
  readonly defaults: T;
  /** Cross-field checks on a resolved config; throws with a message naming the key. */
  readonly check?: (config: T, place: ConfigPlace) => void;
}

/** A policy section of the module options: named configs and instances. */
export interface PolicySection<I> {
  /** Named configs; `default` is merged into every instance. */
  configs?: Record<string, I & { baseConfig?: string }>;
  /** Named instances; `baseConfig` picks a config other than `default`. */
  instances?: Record<string, I & { baseConfig?: string }>;
  /** Bounds on the keys of each instance used per key (`key` on a decorator, `{ key }` on a getter). */
  keys?: KeysOptions;
}

/** Section option `keys`: how many keys one instance keeps, and how long an unused one is kept. */
export interface KeysOptions {
  /** Most keys per instance; past it the least recently used evictable key goes. Default 1000. */
  max?: number;
  /** A key unused this long is evicted (unless it holds state a restart would lose). Default `'10m'`. */
  idleTimeout?: Duration;
}

/** Section option `keys` after validation (durations in ms). */
export interface ResolvedKeys {
  readonly max: number;
  readonly idleTimeoutMs: number;
}

/** The bounds of `keys` when a section does not give them. */
export const DEFAULT_KEYS: ResolvedKeys = Object.freeze({ max: 1000, idleTimeoutMs: 600_000 });

/** The resolved configs and instances of one policy. */
export interface ResolvedSection<T> {
  readonly defaultConfig: T;
  readonly instances: ReadonlyMap<string, T>;
  /** The bounds on each instance's keys (section option `keys`). */
  readonly keys: ResolvedKeys;
}

const BASE_CONFIG = 'baseConfig';
/** Where a partial keeps the spelling its `baseConfig` key was written in. */
const BASE_CONFIG_WRITTEN = 'baseConfigKey';

/**
 * How the keys and names of a section are bound. Native options (forRoot)
 * are strict; an application.yml is bound as Spring binds it (see
 * {@link SPRING_BINDING}).
 */
export interface SectionBinding {
  /** An unknown key: an error, or ignored with one warning (as Spring's binder ignores it). */
  readonly unknownKeys: 'error' | 'warn';
  /** Spring's rules: a name written without brackets loses every character but letters, digits and `-`; an empty value is no value. */
  readonly spring: boolean;
  /** Replaces some of the schema's defaults (Resilience4j's defaults for an application.yml). */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /** How the names of exception lists are bound (the Java names of a Spring config); none: names stay names. */
  readonly errorNames?: ErrorNames;
}

/** How forRoot binds native options: every key must be known, names are kept as written. */
export const NATIVE_BINDING: SectionBinding = { unknownKeys: 'error', spring: false };

/** What an exception list that matches nothing would do, by key (Resilience4j's exception rules where they differ). */
const UNMATCHED_CONSEQUENCE_RESILIENCE4J: Readonly<Record<string, string>> = {
  retryExceptions: 'no error would be retried',
};

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
  names: ErrorNames,
  place: ConfigPlace,
  key: string,
  rawKey: string,
  warn: (message: string) => void,
  resilience4jRules: boolean,
): void {
  const foreign = list.filter((e): e is string => typeof e === 'string' && names.isForeign(e));
  if (foreign.length === 0) return;
  warn(
    UNMATCHED_EXCEPTIONS(
      place,
      rawKey,
      foreign,
      foreign.length === list.length
        ? ((resilience4jRules ? UNMATCHED_CONSEQUENCE_RESILIENCE4J[key] : undefined) ?? UNMATCHED_CONSEQUENCE[key])
        : undefined,
    ),
  );
}

/** A Resilience4j property with no effect here (one warning) or renamed since 0.x (an error); false when `rawKey` is neither. */
function handleResilience4jKey(
  policy: string,
  rawKey: string,
  place: ConfigPlace,
  warn: (message: string) => void,
  binding: SectionBinding,
  table = IGNORED_INSTANCE_PROPERTIES,
): boolean {
  const legacy = LEGACY_PROPERTIES[policy];
  const renamed = legacy && findKey(rawKey, Object.keys(legacy));
  if (renamed !== undefined) {
    // Spring's binder ignores a property its class no longer has: the 0.x key starts, with no effect.
    if (binding.unknownKeys === 'error') throw new Error(LEGACY_PROPERTY(place, rawKey, legacy[renamed]));
    warn(IGNORED_LEGACY_PROPERTY(place, rawKey, legacy[renamed]));
    return true;
  }
  const springOnly =
    binding.unknownKeys === 'warn' && table === IGNORED_INSTANCE_PROPERTIES
      ? SPRING_IGNORED_PROPERTIES[policy]
      : undefined;
  const unbound = springOnly === undefined ? undefined : findKey(rawKey, Object.keys(springOnly));
  if (springOnly !== undefined && unbound !== undefined) {
    warn(SPRING_IGNORED_PROPERTY(place, rawKey, springOnly[unbound]));
    return true;
  }
  const ignored = table[policy];
  const known = ignored && findKey(rawKey, Object.keys(ignored));
  if (known === undefined) return false;
  warn(IGNORED_PROPERTY(place, rawKey, ignored[known]));
  return true;
}

/**
 * Reads the partial settings of one config or instance: every key is
 * matched to the schema in Spring's relaxed form and its value checked.
 */
export function readPartial<T extends object>(
  schema: PolicySchema<T>,
  raw: unknown,
  place: ConfigPlace,
  warn: (message: string) => void,
  allowBase = true,
  binding: SectionBinding = NATIVE_BINDING,
): Partial<T> & { baseConfig?: string } {
  if (raw === null || raw === undefined) return {};
  const fields = schema.fields as Record<string, FieldSpec>;
  const known = allowBase ? [...Object.keys(fields), BASE_CONFIG] : Object.keys(fields);
  const given = new GivenOptions(binding.spring ? withoutEmptyValues(raw) : raw, place, known, {
    onUnknown: (rawKey, value) => {
      if (handleResilience4jKey(schema.policy, rawKey, place, warn, binding)) return true;
      // Spring splits a dotted map key too, so 'payments.v2' arrives as instance 'payments' with a key 'v2'.
      const hint = looksLikeSettings(value, known) ? DOTTED_NAME_HINT : '';
      if (binding.unknownKeys === 'error') throw new Error(UNKNOWN_KEY(place, rawKey, known) + hint);
      warn(IGNORED_UNKNOWN_KEY(place, rawKey, known) + hint);
      return true;
    },
  });
  const out: Record<string, unknown> = {};
  for (const key of given.keys()) {
    if (key === BASE_CONFIG) {
      out.baseConfig = given.read(key, configName);
      // Messages quote the key as the file spells it (`base-config`).
      out[BASE_CONFIG_WRITTEN] = given.written(key);
      continue;
    }
    const spec = fields[key];
    out[key] = given.read(key, readerOf(spec));
    if (spec.kind === 'errors' && out[key] !== undefined && binding.errorNames !== undefined) {
      const list = out[key] as ErrorClassOrName[];
      const rules = given.has('exceptionRules') ? given.raw('exceptionRules') : binding.defaults?.exceptionRules;
      const resilience4jRules = typeof rules === 'string' && findKey(rules, ['resilience4j']) !== undefined;
      checkExceptionNames(list, binding.errorNames, place, key, given.written(key), warn, resilience4jRules);
      out[key] = bindErrorNames(list, binding.errorNames);
    }
  }
  return out as Partial<T> & { baseConfig?: string };
}

/** A map holding known keys: most likely the settings of an instance whose dotted name was split. */
function looksLikeSettings(value: unknown, known: readonly string[]): boolean {
  return isPlainObject(value) && Object.keys(value).some((k) => findKey(k, known) !== undefined);
}

/**
 * Spring binds an empty value (`retry-exceptions:` whose items are all
 * commented out, `max-attempts=` in a .properties file) as no value: an
 * empty list, or the base config's value.
 */
function withoutEmptyValues(raw: unknown): unknown {
  if (!isPlainObject(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) if (value !== null && value !== '') setOwn(out, key, value);
  return out;
}

/**
 * The name an instance or config key binds to. A bracketed key is kept
 * whole; otherwise Spring keeps only letters, digits and `-` of a map key
 * (`HttpBinFeignApi#status(int)` binds as `HttpBinFeignApistatusint`), which
 * is warned about, as the annotation's name then no longer finds it.
 */
function boundName(key: string, place: ConfigPlace, warn: (message: string) => void, binding: SectionBinding): string {
  const bracketed = bracketedName(key);
  if (bracketed !== undefined) return bracketed;
  if (!binding.spring) return key;
  const stripped = key.replace(/[^A-Za-z0-9-]/g, '');
  if (stripped !== key) warn(NAME_STRIPPED(place, key, stripped));
  return stripped;
}

const configName: OptionReader<string> = (value, place, key) =>
  typeof value === 'string' && value.length > 0 ? value : invalidOption(place, key, 'a config name', value);

/** The reader of one kind of field. */
function readerOf(spec: FieldSpec): OptionReader<unknown> {
  switch (spec.kind) {
    case 'duration':
      return durationOption({ positive: spec.positive });
    case 'integer':
      return integerOption(spec.min, spec.max);
    case 'number':
      return numberOption(spec);
    case 'percent':
      return percentOption;
    case 'boolean':
      return booleanOption;
    case 'enum':
      return enumOption(spec.values);
    case 'errors':
      return errorListOption(true);
    case 'function':
      return functionOption();
    case 'object': {
      const fields: Record<string, OptionReader<unknown>> = {};
      for (const [key, field] of Object.entries(spec.fields)) fields[key] = readerOf(field);
      return objectOption(fields);
    }
    case 'custom':
      return spec.read;
  }
}

/** Keys of a policy section; `backends` and `limiters` are Resilience4j's older names of `instances`. */
const SECTION_KEYS = ['configs', 'instances', 'backends', 'limiters', 'keys'];

const readKeysMax = integerOption(1);
const readIdleTimeout = durationOption({ positive: true, expected: 'a positive duration' });

/** Section option `keys`, validated: errors name the section's `keys` and the key. */
function readKeys(policy: string, raw: unknown): ResolvedKeys {
  if (raw === undefined || raw === null) return DEFAULT_KEYS;
  const given = new GivenOptions(raw, `${policy}.keys`, ['max', 'idleTimeout']);
  return Object.freeze({
    max: given.read('max', readKeysMax) ?? DEFAULT_KEYS.max,
    idleTimeoutMs: given.read('idleTimeout', readIdleTimeout) ?? DEFAULT_KEYS.idleTimeoutMs,
  });
}

/**
 * Resolves a policy section: `configs.default` (or `baseConfig`) is merged
 * into every instance, over the schema's defaults, and each result checked.
 */
export function resolveSection<T extends object>(
  schema: PolicySchema<T>,
  raw: unknown,
  warn: (message: string) => void,
  binding: SectionBinding = NATIVE_BINDING,
): ResolvedSection<T> {
  const defaults =
    binding.defaults === undefined ? schema.defaults : ({ ...schema.defaults, ...binding.defaults } as T);
  const section = raw ?? {};
  if (!isPlainObject(section)) throw new Error(NOT_AN_OBJECT(schema.policy, section));
  // Maps, not objects: an instance may be named `__proto__`, which assigning into an object would swallow.
  const configsRaw = new Map<string, unknown>();
  const instancesRaw = new Map<string, unknown>();
  // The map each name was bound in and the keys that bound to it: Spring merges the keys of one map that bind to one name.
  let keys = DEFAULT_KEYS;
  const boundIn = new Map<Map<string, unknown>, Map<string, { readonly rawKey: string; readonly written: string[] }>>([
    [configsRaw, new Map()],
    [instancesRaw, new Map()],
  ]);
  for (const [rawKey, value] of Object.entries(section)) {
    const key = findKey(rawKey, SECTION_KEYS);
    if (key === undefined) {
      if (handleResilience4jKey(schema.policy, rawKey, schema.policy, warn, binding, IGNORED_SECTION_PROPERTIES))
        continue;
      if (binding.unknownKeys === 'error')
        throw new Error(UNKNOWN_KEY(schema.policy, rawKey, ['configs', 'instances', 'keys']));
      warn(IGNORED_UNKNOWN_KEY(schema.policy, rawKey, ['configs', 'instances', 'keys']));
      continue;
    }
    if (key === 'keys') {
      keys = readKeys(schema.policy, value);
      continue;
    }
    const target = key === 'configs' ? configsRaw : instancesRaw;
    if (value === null || value === undefined || (binding.spring && value === '')) continue;
    if (!isPlainObject(value)) throw new Error(NOT_AN_OBJECT(`${schema.policy}.${rawKey}`, value));
    const bound = boundIn.get(target) as Map<string, { readonly rawKey: string; readonly written: string[] }>;
    for (const [written, settings] of Object.entries(value)) {
      const name = checkInstanceName(
        boundName(written, `${schema.policy}.${rawKey}`, warn, binding),
        `${schema.policy}.${rawKey}`,
      );
      const earlier = bound.get(name);
      if (binding.spring && earlier !== undefined && earlier.rawKey === rawKey) {
        // 'HttpBinFeignApi#status(int)' and 'HttpBinFeignApistatusint' are one map key to Spring: one instance.
        earlier.written.push(written);
        warn(NAMES_MERGED(`${schema.policy}.${rawKey}`, name, earlier.written));
        target.set(name, mergeProperties(target.get(name), settings));
        continue;
      }
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
      bound.set(name, { rawKey, written: [written] });
    }
  }

  const partialConfigs = new Map<string, Partial<T> & { baseConfig?: string }>();
  for (const [name, value] of configsRaw) {
    partialConfigs.set(
      name,
      readPartial(schema, value, instancePlace(schema.policy, 'config', name), warn, true, binding),
    );
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
        UNKNOWN_BASE_CONFIG(instancePlace(schema.policy, 'config', name), writtenBaseKey(partial), partial.baseConfig, [
          ...partialConfigs.keys(),
        ]),
      );
    }
    const base = baseName === undefined ? defaults : resolveConfig(baseName, [...chain, name]);
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
    const partial = readPartial(schema, value, place, warn, true, binding);
    let base = defaultConfig;
    if (partial.baseConfig !== undefined) {
      // Resilience4j refuses an instance built on a config of its own name at startup (a circular reference).
      if (partial.baseConfig === name) throw new Error(OWN_NAME_AS_BASE_CONFIG(place, name));
      if (!partialConfigs.has(partial.baseConfig)) {
        throw new Error(
          UNKNOWN_BASE_CONFIG(place, writtenBaseKey(partial), partial.baseConfig, [...partialConfigs.keys()]),
        );
      }
      base = resolveConfig(partial.baseConfig, []);
    }
    const merged = merge(base, partial);
    schema.check?.(merged, place);
    instances.set(name, merged);
  }
  return { defaultConfig, instances, keys };
}

/** Applies decorator overrides to an instance config, checked like the config itself; `binding` binds the names of their exception lists. */
export function applyOverrides<T extends object>(
  schema: PolicySchema<T>,
  base: T,
  overrides: unknown,
  place: ConfigPlace,
  warn: (message: string) => void,
  binding: SectionBinding = NATIVE_BINDING,
): T {
  const merged = merge(base, readPartial(schema, overrides, place, warn, false, binding));
  schema.check?.(merged, place);
  return merged;
}

/** The `baseConfig` key of `partial` as it was written. */
function writtenBaseKey(partial: object): string {
  return (partial as Record<string, string | undefined>)[BASE_CONFIG_WRITTEN] ?? BASE_CONFIG;
}

function merge<T extends object>(base: T, partial: Partial<T> & { baseConfig?: string }): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(partial))
    if (key !== BASE_CONFIG && key !== BASE_CONFIG_WRITTEN) out[key] = value;
  return Object.freeze(out) as T;
}
