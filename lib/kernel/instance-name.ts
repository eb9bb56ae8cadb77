import { PREFIX } from './resilience.messages';

/** The most characters (code points) an instance name may have. */
export const MAX_INSTANCE_NAME_LENGTH = 200;

/** A printable character: a letter, mark, digit, punctuation or symbol, or the plain space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
/** Characters that end or break a quoted label value, a quoted name in a log line, or markup. */
const BREAKING = new Set(['"', "'", '`', '\\', '<', '>']);
/** How the characters a name cannot hold are shown in a message. */
const ESCAPES: Readonly<Record<string, string>> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
/** Most characters of an escaped name a message shows. */
const SHOWN = 80;

/**
 * Why `name` cannot be an instance name, or `undefined` when it can. An
 * instance name is a metric label value and a part of log lines and error
 * messages as it is written, so it is 1 to {@link MAX_INSTANCE_NAME_LENGTH}
 * printable characters (letters, marks, digits, punctuation, symbols and
 * spaces), none of them a quote (`"`, `'`, `` ` ``), a backslash, `<` or `>`,
 * and it neither starts nor ends with a space.
 */
export function instanceNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `is ${name === null ? 'null' : typeof name}, not a string`;
  if (name === '') return 'is empty';
  const characters = [...name];
  if (characters.length > MAX_INSTANCE_NAME_LENGTH) return `has more than ${MAX_INSTANCE_NAME_LENGTH} characters`;
  if (characters.some((c) => !PRINTABLE.test(c)))
    return 'has a control or invisible character (a line break, a tab, a format character)';
  if (characters.some((c) => BREAKING.has(c))) return 'has a quote, a backslash, < or >';
  if (name.startsWith(' ') || name.endsWith(' ')) return 'has a space at its start or end';
  return undefined;
}

/**
 * `name` as a message shows it: in double quotes, every character an
 * instance name cannot hold escaped (`\n`, `\"`, `\u003c`), at most 80
 * characters of it.
 */
export function escapedName(name: string): string {
  let out = '';
  for (const c of name) {
    if (PRINTABLE.test(c) && !BREAKING.has(c)) out += c;
    else out += ESCAPES[c] ?? unicodeEscape(c);
    if (out.length > SHOWN) break;
  }
  return `"${out.length > SHOWN ? `${out.slice(0, SHOWN - 3)}...` : out}"`;
}

/** `\\uXXXX` for each UTF-16 unit of `c`. */
function unicodeEscape(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/** A name that cannot be an instance name; `source` says where it came from. */
export const INVALID_INSTANCE_NAME = (name: unknown, source: string): string =>
  `${PREFIX}: invalid instance name ${typeof name === 'string' ? escapedName(name) : `(${typeof name})`} (from ${source}): it ${
    instanceNameProblem(name) ?? 'is valid'
  }; an instance name is a metric label value and a log line as written: 1 to ${MAX_INSTANCE_NAME_LENGTH} printable characters, no quote, backslash, < or >, no space at its start or end (docs/configuration.md, "Instance names")`;

/**
 * `name`, when it can be an instance name.
 *
 * @param source - where the name came from, for the error (`@Retry on Payments.charge`, `retry.instances`)
 * @throws TypeError naming the name, escaped, where it came from and what is wrong with it
 */
export function checkInstanceName(name: unknown, source: string): string {
  if (instanceNameProblem(name) !== undefined) throw new TypeError(INVALID_INSTANCE_NAME(name, source));
  return name as string;
}
