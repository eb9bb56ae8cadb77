import { DUPLICATE_PROPERTY, INVALID_VALUE } from './config.messages';
import { isPlainObject } from './plain-object';

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

/**
 * Two maps of properties bound to one name, merged as Spring's binder merges
 * them: property by property in relaxed form (`max-attempts` and
 * `maxAttempts` are one property), maps within them likewise, and the later
 * map's value winning for a property both give (a list is one value).
 */
export function mergeProperties(earlier: unknown, later: unknown): unknown {
  if (!isPlainObject(earlier) || !isPlainObject(later)) return later;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(earlier)) setOwn(out, key, value);
  for (const [key, value] of Object.entries(later)) {
    const same = Object.keys(out).find((k) => canonicalKey(k) === canonicalKey(key));
    const merged = same === undefined ? value : mergeProperties(out[same], value);
    if (same !== undefined) delete out[same];
    setOwn(out, key, merged);
  }
  return out;
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
 * A map or list shared by several keys (YAML aliases) is read once and its
 * result shared too, never changed in place, so the work is linear in the
 * distinct maps and lists however often they are shared.
 */
export function unflatten(value: unknown, path = ''): unknown {
  return new Unflattening().read(value, path);
}

class Unflattening {
  /** The result of each map and list read, by the map or list. */
  private readonly done = new WeakMap<object, unknown>();
  /** Maps made for the result being built: only these may change, as any other result may be shared. */
  private readonly owned = new WeakSet<object>();

  read(value: unknown, path: string): unknown {
    if (!Array.isArray(value) && !isPlainObject(value)) return value;
    const known = this.done.get(value);
    if (known !== undefined) return known;
    let out: unknown;
    if (Array.isArray(value)) out = value.map((item, i) => this.read(item, `${path}[${i}]`));
    else {
      const map: Record<string, unknown> = {};
      for (const [rawKey, raw] of Object.entries(value)) {
        const where = path === '' ? rawKey : `${path}.${rawKey}`;
        this.insert(map, segmentsOf(rawKey), this.read(raw, where), where);
      }
      out = this.finishLists(map, path);
    }
    this.done.set(value, out);
    return out;
  }

  private insert(target: Record<string, unknown>, segments: Segment[], value: unknown, where: string): void {
    let node: Record<string, unknown> = target;
    for (let i = 0; i < segments.length - 1; i++) {
      const key = String(segments[i]);
      const next = ownValue(node, key);
      if (next === undefined) node = setOwn(node, key, this.own(listOrMap(segments[i + 1])));
      else if (isPlainObject(next)) node = setOwn(node, key, this.changeable(next));
      else if (Array.isArray(next)) node = setOwn(node, key, this.own(toIndexed(next)));
      else if (next !== null && typeof next === 'object') node = next as Record<string, unknown>;
      else throw new Error(DUPLICATE_PROPERTY(where));
    }
    const last = String(segments[segments.length - 1]);
    setOwn(node, last, this.mergeValues(ownValue(node, last), value, where));
  }

  private mergeValues(existing: unknown, value: unknown, where: string): unknown {
    if (existing === undefined) return value;
    if (isMergeable(existing) && isMergeable(value)) {
      const out = this.changeable(existing as Record<string, unknown>);
      for (const [key, v] of Object.entries(value as Record<string, unknown>))
        setOwn(out, key, this.mergeValues(ownValue(out, key), v, `${where}.${key}`));
      return out;
    }
    throw new Error(DUPLICATE_PROPERTY(where));
  }

  /** `node` if it was made for the result being built, else a copy of it that is. */
  private changeable(node: Record<string, unknown>): Record<string, unknown> {
    if (this.owned.has(node)) return node;
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(node)) setOwn(copy, key, node[key]);
    return this.own(copy);
  }

  private own<T extends object>(node: T): T {
    this.owned.add(node);
    return node;
  }

  /** Turns the indexed maps made for this result into lists; results read before are finished already. */
  private finishLists(node: Record<string, unknown>, path: string): Record<string, unknown> {
    for (const [key, value] of Object.entries(node)) {
      if (value === null || typeof value !== 'object' || !this.owned.has(value)) continue;
      const where = `${path}.${key}`;
      if (!(INDEXED in value)) {
        this.finishLists(value as Record<string, unknown>, where);
        continue;
      }
      const indexed = this.finishLists(value, where);
      const keys = Object.keys(indexed);
      if (!keys.every((k, i) => k === String(i)))
        throw new Error(
          INVALID_VALUE(path === '' ? 'options' : path, key, 'a list indexed from [0] without gaps', keys),
        );
      setOwn(
        node,
        key,
        keys.map((k) => indexed[k]),
      );
    }
    return node;
  }
}

/**
 * Reads and writes own properties only: names such as `constructor` or
 * `__proto__` (an instance may be called that) are then keys like any
 * other, never Object.prototype's members or the prototype itself.
 */
function ownValue(node: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(node, key) ? node[key] : undefined;
}

/** Sets `key` of `node` as an own property, `__proto__` included; answers `value`. */
export function setOwn<T>(node: Record<string, unknown>, key: string, value: T): T {
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

function isMergeable(value: unknown): boolean {
  return (
    value !== null && typeof value === 'object' && !Array.isArray(value) && (isPlainObject(value) || INDEXED in value)
  );
}
