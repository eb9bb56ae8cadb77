import { createHash } from 'node:crypto';

/** Longest key accepted, as the IETF draft and Stripe allow. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** The result of reading an idempotency key header. */
export type ParsedIdempotencyKey =
  | { readonly kind: 'absent' }
  | { readonly kind: 'invalid'; readonly reason: string }
  | { readonly kind: 'valid'; readonly key: string };

const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * Reads an `Idempotency-Key` header: the bare form (`abc`) or the quoted
 * structured-field string the IETF draft defines (`"abc"`, with `\"` and
 * `\\` escapes). The key is 1–255 printable ASCII characters. A header given
 * twice is invalid: which of the two the client meant is anyone's guess.
 *
 * @param values - the header's field values, one per line received (`undefined` when absent)
 */
export function parseIdempotencyKey(values: readonly string[] | undefined): ParsedIdempotencyKey {
  if (values === undefined || values.length === 0) return { kind: 'absent' };
  if (values.length > 1) return { kind: 'invalid', reason: 'it was sent more than once' };
  const raw = values[0].trim();
  let key = raw;
  if (raw.startsWith('"')) {
    const unquoted = unquote(raw);
    if (unquoted === undefined)
      return { kind: 'invalid', reason: 'a quoted key must be one string with only \\" and \\\\ escaped' };
    key = unquoted;
  }
  if (key.length === 0) return { kind: 'invalid', reason: 'it is empty' };
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    return { kind: 'invalid', reason: `it is ${key.length} characters long, more than ${MAX_IDEMPOTENCY_KEY_LENGTH}` };
  if (!PRINTABLE.test(key))
    return { kind: 'invalid', reason: 'it may only hold printable ASCII characters (no control characters)' };
  return { kind: 'valid', key };
}

/** The content of an sf-string (RFC 8941 §3.3.3), or `undefined` when `text` is not exactly one. */
function unquote(text: string): string | undefined {
  let out = '';
  // Stryker disable next-line EqualityOperator: one step past the end reads no closing quote, and the loop returns undefined either way
  for (let i = 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      const escaped = text[++i];
      if (escaped !== '"' && escaped !== '\\') return undefined;
      out += escaped;
    } else if (c === '"') {
      return i === text.length - 1 ? out : undefined;
    } else {
      out += c;
    }
  }
  return undefined;
}

/**
 * The store key of a client key: principal, method and matched route (or, for a
 * method call, the method's name) and the key, as a JSON array so that no
 * choice of key can collide with another scope.
 */
export function scopedKey(principal: string | undefined, method: string, route: string, key: string): string {
  return JSON.stringify([principal ?? null, method, route, key]);
}

/**
 * SHA-256 (hex) of the canonical JSON of `value`: object keys sorted at
 * every level, so two requests that differ only in key order match.
 *
 * @param onCycle - the message to throw when `value` refers to itself
 */
export function fingerprintOf(value: unknown, onCycle: () => string): string {
  return createHash('sha256').update(canonicalJson(value, onCycle)).digest('hex');
}

/**
 * JSON with object keys sorted, following `JSON.stringify`'s rules
 * otherwise (`toJSON` honoured, `undefined` and functions left out of
 * objects and written as `null` in arrays); a `bigint` is written as a
 * string and bytes as base64.
 */
export function canonicalJson(value: unknown, onCycle: () => string): string {
  const path = new Set<object>();
  const write = (v: unknown, inArray: boolean): string | undefined => {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function')
      v = (v as { toJSON(): unknown }).toJSON();
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return JSON.stringify(v);
      case 'number':
        return Number.isFinite(v) ? JSON.stringify(v) : 'null';
      case 'bigint':
        return JSON.stringify(`${v}n`);
      case 'undefined':
      case 'function':
      case 'symbol':
        return inArray ? 'null' : undefined;
    }
    if (v === null) return 'null';
    const object = v as object;
    if (ArrayBuffer.isView(object))
      return JSON.stringify(Buffer.from(object.buffer, object.byteOffset, object.byteLength).toString('base64'));
    if (path.has(object)) throw new TypeError(onCycle());
    path.add(object);
    let text: string;
    if (Array.isArray(object)) {
      text = `[${object.map((item) => write(item, true)).join(',')}]`;
    } else {
      const parts: string[] = [];
      for (const key of Object.keys(object).sort()) {
        const item = write((object as Record<string, unknown>)[key], false);
        if (item !== undefined) parts.push(`${JSON.stringify(key)}:${item}`);
      }
      text = `{${parts.join(',')}}`;
    }
    path.delete(object);
    return text;
  };
  // Stryker disable next-line BooleanLiteral: a top-level undefined is written as null either way
  return write(value, false) ?? 'null';
}

/**
 * A key for a downstream call (a payment provider's `Idempotency-Key`)
 * derived from the record: the store key and the time the key was first
 * claimed, which a takeover keeps. Every attempt of one logical operation
 * therefore sends the same downstream key, and a key reused after its
 * record expired (a new operation) sends a new one. UUID-shaped (version 8,
 * RFC 9562), which every provider accepts.
 */
export function deriveDownstreamKey(storeKey: string, createdAt: number, suffix: string): string {
  const hex = createHash('sha256')
    .update(`resilience4nest:downstream\n${storeKey}\n${createdAt}\n${suffix}`)
    .digest('hex');
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
