import { isPlainObject } from './plain-object';

/**
 * Texts that came from `${...}` placeholders, by the text they resolved to:
 * messages show the placeholder as written (`${DB_PASSWORD}`) in their place,
 * never what the environment gave. Kept for the process, as the options made
 * from a file are checked again, and warned about, when forRoot uses them.
 */
const placeholderTexts = new Map<string, string>();

/**
 * Records that `resolved` is the text of a value written as `written` with
 * placeholders in it; so is each comma-separated part of it that the
 * written value does not hold as it is (the names of an exception list).
 */
export function rememberPlaceholderText(resolved: string, written: string): void {
  // An empty text tells nothing, and would stand for every empty value in messages.
  if (resolved === written || resolved === '') return;
  placeholderTexts.set(resolved, written);
  // Readers trim what they read (an exception name, an enum value): the trimmed text came from the placeholder too.
  const trimmed = resolved.trim();
  if (trimmed !== '' && trimmed !== written.trim()) placeholderTexts.set(trimmed, written);
  if (!resolved.includes(',')) return;
  const literal = new Set(written.split(',').map((part) => part.trim()));
  for (const part of resolved.split(',').map((p) => p.trim()))
    if (part !== '' && !literal.has(part)) placeholderTexts.set(part, written);
}

/** `text` as a message may show it: the placeholder it was written as, if it came from one. */
export function shownText(text: string): string {
  return placeholderTexts.get(text) ?? text;
}

const CREDENTIAL_WORDS = new Set([
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'token',
  'credential',
  'credentials',
  'apikey',
  'auth',
  'authorization',
  'cookie',
]);

/**
 * Whether a key names a credential, so that its value is never shown: one
 * of its words is `password`, `secret`, `token`, `credentials`, `auth`…, or
 * its last word is `key` after another (`api-key`, `secretKey`, `PRIVATE_KEY`).
 */
export function looksLikeCredential(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (words.some((w) => CREDENTIAL_WORDS.has(w))) return true;
  return words.length > 1 && words[words.length - 1] === 'key';
}

/** What a message shows in place of a credential's value. */
export const NOT_SHOWN = '(not shown)';

/** The password of a URL's user information (`postgres://app:secret@db`). */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*):[^\s/?#@]*@/gi;

/** `text` with the password of every URL in it replaced by {@link NOT_SHOWN}. */
function withoutUrlPasswords(text: string): string {
  return text.replace(URL_PASSWORD, `$1:${NOT_SHOWN}@`);
}

/**
 * A value as a message shows it: JSON-like, cut to `max` characters
 * (ending in `...`), with the placeholder in place of text that came from
 * one, {@link NOT_SHOWN} for the value of a key that names a credential and
 * for the password of a URL, and a class instance (a client, a pool) named
 * by its class, as what it holds may be credentials. Options written in
 * code and options read from a file are shown alike.
 * It renders no more than it shows, so a map shared many times over (a
 * YAML alias bomb) or one that contains itself costs no more than a short one.
 */
export function previewValue(value: unknown, max = 80): string {
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (value === undefined || typeof value === 'symbol' || typeof value === 'bigint') return String(value);
  const preview = new Preview(max);
  preview.add(value, new Set());
  return preview.text();
}

class Preview {
  private readonly parts: string[] = [];
  private length = 0;

  constructor(private readonly max: number) {}

  get full(): boolean {
    return this.length > this.max;
  }

  text(): string {
    const text = this.parts.join('');
    return text.length > this.max ? `${text.slice(0, this.max - 3)}...` : text;
  }

  add(value: unknown, open: Set<object>): void {
    if (this.full) return;
    if (typeof value === 'string')
      return this.push(JSON.stringify(clip(withoutUrlPasswords(shownText(value)), this.max)));
    if (typeof value === 'number') return this.push(Number.isFinite(value) ? String(value) : 'null');
    if (typeof value === 'boolean' || typeof value === 'bigint') return this.push(String(value));
    if (value === null || typeof value !== 'object') return this.push('null');
    const json = (value as { toJSON?: unknown }).toJSON;
    if (typeof json === 'function') return this.add(json.call(value), open);
    if (!Array.isArray(value) && !isPlainObject(value)) return this.push(`an instance of ${className(value)}`);
    if (open.has(value)) return this.push('"[Circular]"');
    open.add(value);
    if (Array.isArray(value)) this.addList(value, open);
    else this.addMap(value, open);
    open.delete(value);
  }

  private addList(list: readonly unknown[], open: Set<object>): void {
    this.push('[');
    for (let i = 0; i < list.length && !this.full; i++) {
      if (i > 0) this.push(',');
      const item = list[i];
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') this.push('null');
      else this.add(item, open);
    }
    this.push(']');
  }

  private addMap(map: Record<string, unknown>, open: Set<object>): void {
    this.push('{');
    let first = true;
    for (const key in map) {
      if (this.full) break;
      if (!Object.hasOwn(map, key)) continue;
      const item = map[key];
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
      if (!first) this.push(',');
      first = false;
      this.push(`${JSON.stringify(clip(key, this.max))}:`);
      if (looksLikeCredential(key)) this.push(JSON.stringify(NOT_SHOWN));
      else this.add(item, open);
    }
    this.push('}');
  }

  private push(part: string): void {
    this.parts.push(part);
    this.length += part.length;
  }
}

/** The name of `value`'s class, as a message shows it. */
function className(value: object): string {
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' ? name : 'an anonymous class';
}

/** At most `max` characters of `text`: more would be cut from the message anyway. */
function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}
