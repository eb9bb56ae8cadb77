import {
  PLACEHOLDER_CYCLE,
  PLACEHOLDER_TOO_DEEP,
  UNCLOSED_PLACEHOLDER,
  UNRESOLVED_PLACEHOLDER,
} from '../config/config.messages';
import { MAX_DOCUMENT_DEPTH } from '../config/document-limits';
import { canonicalKey, setOwn } from '../config/relaxed-binding';
import { isPlainObject } from '../config/plain-object';
import { rememberPlaceholderText } from '../config/value-preview';

/** Marks a property whose placeholders are being resolved: meeting it again is a cycle. */
const RESOLVING = Symbol('resolving');

/**
 * Spring's `${NAME}` and `${NAME:default}` placeholders in the values of one
 * document: `NAME` is an environment variable (`my.prop-name` also as
 * `MY_PROP_NAME` or `MY_PROPNAME`) or another property of the document,
 * whose own placeholders are resolved in turn; a default may hold
 * placeholders too. A ring of properties referring to each other, an
 * unclosed `${` and a name with no value and no default are errors naming
 * the key. Each text is read once, left to right, and each property
 * resolved once, so the work is linear in the document.
 */
export class PlaceholderResolver {
  private readonly properties = new Map<string, string | undefined | typeof RESOLVING>();
  /** The properties being resolved, outermost first, for the message of a cycle. */
  private readonly chain: string[] = [];
  /** The key whose value is being resolved, named by every error. */
  private origin = '';
  /** Each map's keys by their relaxed form, so a lookup costs one step per segment. */
  private readonly indexes = new WeakMap<object, Map<string, string>>();

  /** The environment variables, read once: own entries only, so `constructor` or `toString` are no variables. */
  private readonly environment: ReadonlyMap<string, string>;

  /**
   * @param tree - the whole document, dotted keys unflattened
   * @param environment - the environment variables (`process.env`)
   */
  constructor(
    private readonly tree: Record<string, unknown>,
    environment: NodeJS.ProcessEnv = process.env,
  ) {
    const variables = new Map<string, string>();
    for (const [name, value] of Object.entries(environment)) if (typeof value === 'string') variables.set(name, value);
    this.environment = variables;
  }

  /** The maps and lists already resolved, so one shared by YAML aliases is resolved once. */
  private readonly done = new WeakMap<object, unknown>();

  /**
   * `value`, found at `path`, with the placeholders of every text in it
   * resolved: maps and lists are copied (their keys kept as own keys,
   * `__proto__` included), other values kept as they are.
   */
  resolveAll(value: unknown, path: string): unknown {
    if (typeof value === 'string') return this.resolve(value, path);
    if (!Array.isArray(value) && !isPlainObject(value)) return value;
    const known = this.done.get(value);
    if (known !== undefined) return known;
    let out: unknown;
    if (Array.isArray(value)) out = value.map((item, i) => this.resolveAll(item, `${path}[${i}]`));
    else {
      const map: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) setOwn(map, key, this.resolveAll(item, `${path}.${key}`));
      out = map;
    }
    this.done.set(value, out);
    return out;
  }

  /** `text`, written at `path`, with its placeholders resolved. */
  resolve(text: string, path: string): string {
    if (!text.includes('${')) return text;
    this.origin = path;
    const scan = new TextScan(text, path, this);
    const resolved = scan.all();
    rememberPlaceholderText(resolved, text);
    return resolved;
  }

  /** The value of `name`: an environment variable, else a property holding text, a number or a boolean. */
  lookup(name: string): string | undefined {
    const env = this.variable(name);
    if (env !== undefined) return env;
    const known = this.properties.get(name);
    if (known === RESOLVING) throw new Error(PLACEHOLDER_CYCLE(this.origin, [...this.chain, name]));
    if (known !== undefined || this.properties.has(name)) return known;
    const value = this.property(name);
    if (typeof value !== 'string') {
      const text = typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
      this.properties.set(name, text);
      return text;
    }
    if (this.chain.length >= MAX_DOCUMENT_DEPTH) throw new Error(PLACEHOLDER_TOO_DEEP(this.origin, MAX_DOCUMENT_DEPTH));
    this.properties.set(name, RESOLVING);
    this.chain.push(name);
    const resolved = new TextScan(value, name, this).all();
    this.chain.pop();
    this.properties.set(name, resolved);
    return resolved;
  }

  private variable(name: string): string | undefined {
    const upper = name.replace(/\./g, '_').toUpperCase();
    return this.environment.get(name) ?? this.environment.get(upper) ?? this.environment.get(upper.replace(/-/g, ''));
  }

  private property(name: string): unknown {
    let node: unknown = this.tree;
    for (const segment of name.split('.')) {
      if (!isPlainObject(node)) return undefined;
      const key = this.indexOf(node).get(canonicalKey(segment));
      if (key === undefined) return undefined;
      node = node[key];
    }
    return node;
  }

  private indexOf(node: Record<string, unknown>): Map<string, string> {
    let index = this.indexes.get(node);
    if (index === undefined) {
      index = new Map();
      for (const key of Object.keys(node)) if (!index.has(canonicalKey(key))) index.set(canonicalKey(key), key);
      this.indexes.set(node, index);
    }
    return index;
  }
}

/** One left-to-right reading of a text with placeholders. */
class TextScan {
  private at = 0;

  constructor(
    private readonly text: string,
    private readonly path: string,
    private readonly resolver: PlaceholderResolver,
  ) {}

  /** The whole text, resolved. */
  all(): string {
    return this.until(false, true, 0);
  }

  /**
   * Text up to the end, or up to the `}` closing the placeholder being read
   * (`inDefault`); its placeholders resolved when `resolving`, else only skipped.
   */
  private until(inDefault: boolean, resolving: boolean, depth: number): string {
    const { text } = this;
    let out = '';
    let from = this.at;
    while (this.at < text.length) {
      const c = text.charCodeAt(this.at);
      if (c === 0x24 /* $ */ && text.charCodeAt(this.at + 1) === 0x7b /* { */) {
        out += text.slice(from, this.at);
        out += this.placeholder(resolving, depth + 1);
        from = this.at;
      } else if (inDefault && c === 0x7d /* } */) {
        return out + text.slice(from, this.at);
      } else this.at++;
    }
    if (inDefault) throw new Error(UNCLOSED_PLACEHOLDER(this.path));
    return out + text.slice(from);
  }

  /** The placeholder starting at `${`, resolved (or skipped); leaves `at` after its `}`. */
  private placeholder(resolving: boolean, depth: number): string {
    if (depth > MAX_DOCUMENT_DEPTH) throw new Error(PLACEHOLDER_TOO_DEEP(this.path, MAX_DOCUMENT_DEPTH));
    const { text } = this;
    const start = this.at;
    this.at += 2;
    while (this.at < text.length && text[this.at] !== ':' && text[this.at] !== '}') this.at++;
    if (this.at >= text.length) throw new Error(UNCLOSED_PLACEHOLDER(this.path));
    const name = text.slice(start + 2, this.at).trim();
    const found = resolving && name !== '' ? this.resolver.lookup(name) : undefined;
    let fallback: string | undefined;
    if (text[this.at] === ':') {
      this.at++;
      fallback = this.until(true, resolving && found === undefined, depth);
    }
    this.at++;
    if (!resolving) return '';
    const value = found ?? fallback;
    if (value === undefined) throw new Error(UNRESOLVED_PLACEHOLDER(this.path, text.slice(start, this.at)));
    return value;
  }
}
