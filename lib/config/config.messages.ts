/** Where a config value came from, e.g. `retry instance 'inventory'`. */
export type ConfigPlace = string;

export const PREFIX = 'resilience4nest';

export const instancePlace = (policy: string, kind: 'instance' | 'config', name: string): ConfigPlace =>
  `${policy} ${kind} '${name}'`;

export const overridePlace = (policy: string, decorator: string, name: string, target: string): ConfigPlace =>
  `${policy} @${decorator}('${name}') on ${target}`;

export const INVALID_VALUE = (place: ConfigPlace, key: string, expected: string, value: unknown): string =>
  `${PREFIX}: invalid configuration of ${place}: key '${key}' must be ${expected}, got ${describe(value)}`;

export const UNKNOWN_KEY = (place: ConfigPlace, key: string, known: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${place}: unknown key '${key}'${suggest(key, known)}`;

export const UNKNOWN_SECTION = (key: string, known: readonly string[]): string =>
  `${PREFIX}: invalid module options: unknown section '${key}'${suggest(key, known)}`;

export const UNKNOWN_BASE_CONFIG = (place: ConfigPlace, base: string, known: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'baseConfig' names config '${base}', which is not declared (declared: ${
    known.length ? known.map((k) => `'${k}'`).join(', ') : 'none'
  })`;

export const BASE_CONFIG_CYCLE = (policy: string, chain: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${policy}: baseConfig cycle ${chain.map((c) => `'${c}'`).join(' -> ')}`;

export const NOT_AN_OBJECT = (place: ConfigPlace, value: unknown): string =>
  `${PREFIX}: invalid configuration of ${place}: expected an object of settings, got ${describe(value)}`;

export const UNSUPPORTED_PROPERTY = (place: ConfigPlace, key: string): string =>
  `${PREFIX}: ${place}: Resilience4j property '${key}' is not implemented by resilience4nest and is ignored`;

export const UNKNOWN_INSTANCE = (policy: string, name: string, where: string): string =>
  `${PREFIX}: ${where} uses ${policy} instance '${name}', which is not declared and 'strict' is true`;

export const TOO_MANY_UNDECLARED_INSTANCES = (policy: string, name: string, max: number): string =>
  `${PREFIX}: ${policy} instance '${name}' is not declared, and ${max} undeclared ${policy} instances exist already (module option 'maxUndeclaredInstances'); ` +
  `names built from request data would add instances and metric series without end: declare the instances, or raise the option`;

/** Renders a bad value for a message without flooding it. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}

function suggest(key: string, known: readonly string[]): string {
  const lower = key.toLowerCase();
  const close = known.find((k) => distance(k.toLowerCase(), lower) <= 2);
  return close ? ` (did you mean '${close}'?)` : ` (known keys: ${known.join(', ')})`;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}
