import { DUPLICATE_PROPERTY, INVALID_VALUE } from './config.messages';

/**
 * Spring's relaxed form of a property name: lower case without `-` or `_`,
 * so `slidingWindowSize`, `sliding-window-size`, `sliding_window_size` and
 * `SLIDING_WINDOW_SIZE` are one key.
 */
export function canonicalKey(key: string): string {
  return key.replace(/[-_]/g, '').toLowerCase();
}

/** The entry of `names` whose relaxed form is that of `key`, if any. */
export function findKey<K extends string>(key: string, names: readonly K[]): K | undefined {
  const canonical = canonicalKey(key);
  return names.find((n) => canonicalKey(n) === canonical);
}

/** A plain object (a YAML map or an object literal), not a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  // Any realm's Object.prototype (its own prototype is null), so objects from a vm context count too.
  return proto === null || Object.getPrototypeOf(proto) === null;
}

type Segment = string | number;

/** The name inside a bracketed map key (`[payments.v2]` → `payments.v2`); undefined for a key written without brackets. */
export function bracketedName(key: string): string | undefined {
  return key.length >= 2 && key.startsWith('[') && key.endsWith(']') ? key.slice(1, -1) : undefined;
}

/**
 * `a.b[0].[c.d]` → `['a', 'b', 0, '[c.d]']`: dots split, `[n]` indexes a list,
 * `[...]` quotes a map key, which keeps its brackets so that reading the
 * result again keeps it whole, and names can tell it was quoted (see {@link bracketedName}).
 */
function segmentsOf(key: string): Segment[] {
  const out: Segment[] = [];
  let current = '';
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    if (c === '.') {
      if (current !== '') out.push(current);
      current = '';
    } else if (c === '[') {
      const end = key.indexOf(']', i);
      if (end < 0) {
        current += key.slice(i);
        break;
      }
      if (current !== '') out.push(current);
      current = '';
      const inner = key.slice(i + 1, end);
      out.push(/^\d+$/.test(inner) ? Number(inner) : `[${inner}]`);
      i = end;
    } else current += c;
  }
  if (current !== '' || out.length === 0) out.push(current);
  return out;
}

/**
 * Spring's reading of dotted keys, at any depth: `{ 'resilience4j.retry':
 * { 'instances.a.max-attempts': 3 } }` becomes `{ resilience4j: { retry:
 * { instances: { a: { 'max-attempts': 3 } } } } }`; maps given in several
 * shapes are merged, `key[0]` builds a list and `[a.b]` keeps a dotted map
 * key whole. Only plain objects are walked: class instances (a clock, a
 * store) are kept as they are. A property given twice is an error naming it.
 */
export function unflatten(value: unknown, path = ''): unknown {
  if (Array.isArray(value)) return value.map((item, i) => unflatten(item, `${path}[${i}]`));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [rawKey, raw] of Object.entries(value)) {
    const segments = segmentsOf(rawKey);
    const where = path === '' ? rawKey : `${path}.${rawKey}`;
    insert(out, segments, unflatten(raw, where), where);
  }
  return finishLists(out, path);
}

function insert(target: Record<string, unknown>, segments: Segment[], value: unknown, where: string): void {
  let node: Record<string, unknown> = target;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = String(segments[i]);
    const next = ownValue(node, key);
    if (next === undefined) node = setOwn(node, key, listOrMap(segments[i + 1])) as Record<string, unknown>;
    else if (next !== null && typeof next === 'object' && !Array.isArray(next)) node = next as Record<string, unknown>;
    else if (Array.isArray(next)) node = setOwn(node, key, toIndexed(next)) as Record<string, unknown>;
    else throw new Error(DUPLICATE_PROPERTY(where));
  }
  const last = String(segments[segments.length - 1]);
  setOwn(node, last, mergeValues(ownValue(node, last), value, where));
}

/**
 * Reads and writes own properties only: names such as `constructor` or
 * `__proto__` (an instance may be called that) are then keys like any
 * other, never Object.prototype's members or the prototype itself.
 */
function ownValue(node: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(node, key) ? node[key] : undefined;
}

function setOwn(node: Record<string, unknown>, key: string, value: unknown): unknown {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}

/** Lists under construction are maps with a marker, so `a[1]` may come before `a[0]`. */
const INDEXED = Symbol('indexed');

function listOrMap(next: Segment): Record<string, unknown> {
  return typeof next === 'number' ? { [INDEXED]: true } : {};
}

function toIndexed(list: unknown[]): Record<string, unknown> {
  const out: Record<string | symbol, unknown> = { [INDEXED]: true };
  list.forEach((item, i) => (out[i] = item));
  return out;
}

function mergeValues(existing: unknown, value: unknown, where: string): unknown {
  if (existing === undefined) return value;
  if (isMergeable(existing) && isMergeable(value)) {
    const out = existing as Record<string, unknown>;
    for (const [key, v] of Object.entries(value as Record<string, unknown>))
      setOwn(out, key, mergeValues(ownValue(out, key), v, `${where}.${key}`));
    return out;
  }
  throw new Error(DUPLICATE_PROPERTY(where));
}

function isMergeable(value: unknown): boolean {
  return (
    value !== null && typeof value === 'object' && !Array.isArray(value) && (isPlainObject(value) || INDEXED in value)
  );
}

function finishLists(node: Record<string, unknown>, path: string): Record<string, unknown> {
  for (const [key, value] of Object.entries(node)) {
    if (value !== null && typeof value === 'object' && INDEXED in value) {
      const indexed = finishLists(value, `${path}.${key}`);
      const keys = Object.keys(indexed);
      if (!keys.every((k, i) => k === String(i))) {
        throw new Error(
          INVALID_VALUE(path === '' ? 'options' : path, key, 'a list indexed from [0] without gaps', keys),
        );
      }
      setOwn(
        node,
        key,
        keys.map((k) => indexed[k]),
      );
    } else if (isPlainObject(value)) finishLists(value, `${path}.${key}`);
  }
  return node;
}
