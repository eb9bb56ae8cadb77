/** Where a config value came from, e.g. `retry instance 'inventory'`. */
export type ConfigPlace = string;

import { PREFIX } from '../kernel/resilience.messages';
import { looksLikeCredential, NOT_SHOWN, previewValue, shownText } from './value-preview';

export const instancePlace = (policy: string, kind: 'instance' | 'config', name: string): ConfigPlace =>
  `${policy} ${kind} '${name}'`;

export const overridePlace = (policy: string, decorator: string, name: string, target: string): ConfigPlace =>
  `${policy} @${decorator}('${name}') on ${target}`;

export const INVALID_VALUE = (place: ConfigPlace, key: string, expected: string, value: unknown): string =>
  `${PREFIX}: invalid configuration of ${place}: key '${key}' must be ${expected}, got ${
    looksLikeCredential(key) ? `a value ${NOT_SHOWN}, as the key names a credential` : describe(value)
  }`;

export const UNKNOWN_KEY = (place: ConfigPlace, key: string, known: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${place}: unknown key '${key}'${suggest(key, known)}`;

export const UNKNOWN_SECTION = (key: string, known: readonly string[]): string =>
  `${PREFIX}: invalid module options: unknown section '${key}'${suggest(key, known)}`;

export const UNKNOWN_BASE_CONFIG = (place: ConfigPlace, key: string, base: string, known: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${place}: key '${key}' names config '${shownText(base)}', which is not declared (declared: ${
    known.length ? known.map((k) => `'${k}'`).join(', ') : 'none'
  })`;

export const BASE_CONFIG_CYCLE = (policy: string, chain: readonly string[]): string =>
  `${PREFIX}: invalid configuration of ${policy}: baseConfig cycle ${chain.map((c) => `'${c}'`).join(' -> ')}`;

export const NOT_AN_OBJECT = (place: ConfigPlace, value: unknown): string =>
  `${PREFIX}: invalid configuration of ${place}: expected an object of settings, got ${describe(value)}`;

/** A Resilience4j property accepted here with no effect; `instead` says what happens in its place. */
export const IGNORED_PROPERTY = (place: ConfigPlace, key: string, instead: string): string =>
  `${PREFIX}: ${place}: Resilience4j property '${key}' is ignored: ${instead}`;

/** A Resilience4j section with no equivalent here. */
export const IGNORED_SECTION = (key: string, instead: string): string =>
  `${PREFIX}: Resilience4j section '${key}' is ignored: ${instead}`;

/** The file's aspect orders nest the layers differently from the module's order. */
export const ASPECT_ORDER_DIFFERS = (spring: readonly string[], order: readonly string[]): string =>
  `${PREFIX}: the *-aspect-order properties nest the layers as ${spring.filter((k) => k !== 'idempotent' && k !== 'fallback').join(' -> ')} (outermost first) in Spring; here they run as ${order
    .filter((k) => k !== 'idempotent' && k !== 'fallback')
    .join(' -> ')}. For Spring's nesting, set the module option order: [${spring.map((k) => `'${k}'`).join(', ')}]`;

/** A key Spring's binder would ignore, accepted with no effect (Spring binding); a near miss gets a "did you mean". */
export const IGNORED_UNKNOWN_KEY = (place: ConfigPlace, key: string, known: readonly string[]): string =>
  `${PREFIX}: ${place}: unknown key '${key}' is ignored, as Spring's binder ignores it: the setting keeps its base config's or default value${suggest(key, known)}`;

/** A key the Resilience4j property class does not have, which Spring's binder ignores (Spring binding). */
export const SPRING_IGNORED_PROPERTY = (place: ConfigPlace, key: string, instead: string): string =>
  `${PREFIX}: ${place}: key '${key}' is no property of Resilience4j's, and is ignored as Spring's binder ignores it: ${instead}`;

/** A section Spring's binder would ignore, accepted with no effect (Spring binding). */
export const IGNORED_UNKNOWN_SECTION = (key: string, known: readonly string[]): string =>
  `${PREFIX}: unknown section '${key}' is ignored, as Spring's binder ignores it: nothing is configured from it${suggest(key, known)}`;

/** A Resilience4j 0.x property, which Spring ignores with Resilience4j 2.x (Spring binding). */
export const IGNORED_LEGACY_PROPERTY = (place: ConfigPlace, key: string, replacement: string): string =>
  `${PREFIX}: ${place}: '${key}' is a Resilience4j 0.x property, ignored as Spring ignores it with Resilience4j 2.x: the setting keeps its base config's or default value; write ${replacement} for it to take effect`;

/** An unbracketed map key that Spring strips to letters, digits and `-`. */
export const NAME_STRIPPED = (place: ConfigPlace, key: string, stripped: string): string =>
  `${PREFIX}: ${place}: name '${key}' binds as '${stripped}', as Spring keeps only letters, digits and '-' of a map key written without brackets; write '[${key}]' to keep it as written`;

/** Unbracketed map keys that bind to one name: one instance, as in Spring, their properties merged. */
export const NAMES_MERGED = (place: ConfigPlace, name: string, keys: readonly string[]): string =>
  `${PREFIX}: ${place}: ${keys.map((k) => `'${k}'`).join(', ')} bind to one name, '${name}', as in Spring: they are one instance, whose properties are merged (where both give a property, the later one wins)`;

/** A Spring file's options take Resilience4j's defaults where this module's differ; logged once when the module starts. */
export const SPRING_DEFAULTS_APPLY =
  `${PREFIX}: the options are bound as a Spring file (binding: 'spring'), so Resilience4j's defaults apply ` +
  'where this module differs: a retry retries every error and waits without jitter, and a circuit breaker ' +
  "counts 4xx answers as failures; set 'exception-rules: resilience4nest' in a retry or circuitbreaker " +
  "config (and 'jitter' in a retry's) for this module's rules";

/** An instance whose baseConfig is its own name: Resilience4j refuses the circular reference. */
export const OWN_NAME_AS_BASE_CONFIG = (place: ConfigPlace, name: string): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'baseConfig' names '${name}', the instance's own name: a circular reference, which Resilience4j refuses at startup (give the config another name)`;

/** A Resilience4j 0.x property, gone in 2.x. */
export const LEGACY_PROPERTY = (place: ConfigPlace, key: string, replacement: string): string =>
  `${PREFIX}: invalid configuration of ${place}: '${key}' is a Resilience4j 0.x property; Resilience4j 2.x (and resilience4nest) use ${replacement}`;

/** The same property given twice, e.g. as a dotted key and as a nested map. */
export const DUPLICATE_PROPERTY = (path: string): string =>
  `${PREFIX}: invalid configuration: property '${path}' is given twice (as a dotted key and as a nested map, or twice under spellings Spring treats as one)`;

/** A thread-pool bulkhead runs as a semaphore bulkhead here. */
export const THREAD_POOL_BULKHEAD_MAPPED = (names: readonly string[]): string =>
  `${PREFIX}: thread-pool-bulkhead instance(s) ${names.map((n) => `'${n}'`).join(', ')} run as bulkheads on the event loop (no thread pool in Node): max-thread-pool-size -> maxConcurrentCalls, queue-capacity -> queueCapacity; queued calls wait until a permit frees up, their time limit fires or their deadline passes; use them with @Bulkhead(name, { type: 'THREADPOOL' })`;

/** An exception list naming Java classes that nothing in a Node process throws. */
export const UNMATCHED_EXCEPTIONS = (
  place: ConfigPlace,
  key: string,
  names: readonly string[],
  consequence: string | undefined,
): string =>
  `${PREFIX}: ${place}: '${key}' names ${[...new Set(names.map(shownText))].map((n) => `'${n}'`).join(', ')}, which no Node error stands for (only an error class of the same simple name would match)${
    consequence === undefined ? '' : `; as listed, ${consequence}`
  }`;

/** A time limiter inside a breaker whose recordExceptions does not list timeouts: its timeouts count as successes. */
export const TIMEOUT_NOT_RECORDED = (breaker: string, timeLimiter: string, target: string): string =>
  `${PREFIX}: circuitBreaker instance '${breaker}' on ${target}: its record-exceptions list does not name timeouts, so a TimeoutExceededError from time limiter '${timeLimiter}' inside it counts as a success (as in Resilience4j), and slow calls never open it; add java.util.concurrent.TimeoutException (or TimeoutExceededError) to record-exceptions to count them as failures`;

/** A forRootAsync factory that returned no options. */
export const NO_ASYNC_OPTIONS = (value: null | undefined): string =>
  `${PREFIX}: ResilienceModule.forRootAsync: useFactory returned ${value} instead of options. If it reads ConfigService.get('resilience4j'): that is undefined when application.yml writes dotted root keys ('resilience4j.circuitbreaker:'); read the file with fromSpringConfig(document) instead (README, Configuration)`;

/** A Spring document handed to `fromSpringConfig` has no `resilience4j` part. */
export const NO_RESILIENCE4J_PART = (keys: readonly string[]): string =>
  `${PREFIX}: fromSpringConfig: the document has no 'resilience4j' part (its top-level keys: ${keys.length ? keys.join(', ') : 'none'})`;

/** A Spring property placeholder with no value in the environment and no default. */
export const UNRESOLVED_PLACEHOLDER = (path: string, placeholder: string): string =>
  `${PREFIX}: fromSpringConfig: '${path}' uses placeholder '${placeholder}', which has no environment variable and no default (write \${NAME:default})`;

/** Text given to `fromSpringConfig` that is not a YAML map. */
export const NOT_A_SPRING_DOCUMENT = (reason: string): string =>
  `${PREFIX}: fromSpringConfig: the text is not an application.yml document: ${reason}`;

/** An unknown key holding settings: most likely the tail of a dotted instance name. */
export const DOTTED_NAME_HINT =
  "; dotted names are split as Spring splits them: write a dotted instance name in brackets, e.g. '[payments.v2]'";

/** A whole Spring document passed where the `resilience4j` block was expected. */
export const WHOLE_DOCUMENT_HINT =
  ' (a whole application.yml goes through fromSpringConfig(document), which takes its resilience4j part)';

/** A name that is not declared, in strict mode; a name a placeholder gave is shown as the placeholder. */
export const UNKNOWN_INSTANCE = (policy: string, name: string, where: string, close?: string): string =>
  `${PREFIX}: ${where} uses ${policy} instance '${shownText(name)}', which is not declared and 'strict' is true` +
  (close === undefined ? '' : ` (did you mean '${close}'?)`);

/** A name that is not declared but close to one that is; a name a placeholder gave is shown as the placeholder. */
export const UNDECLARED_INSTANCE_CLOSE = (policy: string, name: string, where: string, close: string): string =>
  `${PREFIX}: ${where} uses ${policy} instance '${shownText(name)}', which is not declared: it gets configs.default (did you mean '${close}'?)`;

/** The name of `known` a few edits from `name` (a likely typo of it: 2 for long names, fewer for short), if any. */
export function closeName(name: string, known: Iterable<string>): string | undefined {
  const most = Math.min(2, Math.floor(name.length / 4));
  for (const candidate of known)
    if (candidate !== name && Math.abs(candidate.length - name.length) <= most && distance(candidate, name) <= most)
      return candidate;
  return undefined;
}

/** Renders a bad value for a message without flooding it, and without what came from a placeholder (see {@link previewValue}). */
export function describe(value: unknown): string {
  return previewValue(value);
}

function suggest(key: string, known: readonly string[]): string {
  // Compared in Spring's relaxed form, answered in the spelling the key was written in.
  const relaxed = (k: string): string => k.replace(/[-_]/g, '').toLowerCase();
  const close = closestKey(key, known, relaxed);
  return close ? ` (did you mean '${inStyleOf(key, close)}'?)` : ` (known keys: ${known.join(', ')})`;
}

/**
 * The known key `key` most likely stands for: one a couple of edits away, or
 * one whose words hold the key's words in order (`permitted-calls-in-half-open-state`
 * → `permittedNumberOfCallsInHalfOpenState`), or one within a third of the key's length.
 */
function closestKey(key: string, known: readonly string[], relaxed: (k: string) => string): string | undefined {
  const written = relaxed(key);
  const words = wordsOf(key);
  let best: { key: string; distance: number } | undefined;
  const most = Math.max(2, Math.floor(written.length / 3));
  for (const candidate of known) {
    const relaxedCandidate = relaxed(candidate);
    // Lengths that far apart are no typo: the difference ranks the candidate, and the quadratic distance is skipped.
    const apart = Math.abs(relaxedCandidate.length - written.length);
    const d = apart > most ? apart : distance(relaxedCandidate, written);
    const near = d <= most || (words.length > 1 && holdsInOrder(wordsOf(candidate), words));
    if (near && (best === undefined || d < best.distance)) best = { key: candidate, distance: d };
  }
  return best?.key;
}

function wordsOf(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_-]+/)
    .filter(Boolean);
}

function holdsInOrder(words: readonly string[], part: readonly string[]): boolean {
  let at = 0;
  for (const word of words) if (word === part[at]) at++;
  return at === part.length;
}

function inStyleOf(written: string, camel: string): string {
  const words = camel
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(' ');
  if (written.includes('-')) return words.join('-');
  if (written.includes('_')) return written === written.toUpperCase() ? words.join('_').toUpperCase() : words.join('_');
  return camel;
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

/** A document (a Spring file, or module options) beyond the size cap; `source` is `fromSpringConfig` or `module options`. */
export const DOCUMENT_TOO_LARGE = (source: string, size: string, maxLength: number, maxEntries: number): string =>
  `${PREFIX}: ${source}: too large (${size}); at most ${maxLength} characters of text and ${maxEntries} keys and list items are read`;

/** A document nested deeper than is read. */
export const DOCUMENT_TOO_DEEP = (source: string, path: string, maxDepth: number): string =>
  `${PREFIX}: ${source}: '${shortPath(path)}' is nested more than ${maxDepth} deep (each segment of a dotted key counts); no Resilience4j property needs more than 6`;

/** YAML text nested deeper than `fromSpringConfig` reads, found before parsing it. */
export const TEXT_TOO_DEEP = (line: number, maxDepth: number): string =>
  `${PREFIX}: fromSpringConfig: line ${line} of the text is nested more than ${maxDepth} deep (indentation, '- ' items and open '[' or '{' each count); no Resilience4j property needs more than 6`;

/** A document holding a map or list that contains itself. */
export const DOCUMENT_CONTAINS_ITSELF = (source: string, path: string): string =>
  `${PREFIX}: ${source}: '${shortPath(path)}' contains itself (a map or list that refers back to one around it)`;

/** Placeholders that refer to each other in a ring. */
export const PLACEHOLDER_CYCLE = (path: string, chain: readonly string[]): string =>
  `${PREFIX}: fromSpringConfig: '${path}' uses a placeholder that refers back to itself: ${chain.map((c) => `'${c}'`).join(' -> ')}`;

/** A `${` with no closing `}`. */
export const UNCLOSED_PLACEHOLDER = (path: string): string =>
  `${PREFIX}: fromSpringConfig: '${path}' has a placeholder '\${' without its closing '}'`;

/** Placeholders nested in defaults, or properties referring to properties, deeper than `fromSpringConfig` reads. */
export const PLACEHOLDER_TOO_DEEP = (path: string, maxDepth: number): string =>
  `${PREFIX}: fromSpringConfig: '${path}' nests placeholders (in defaults, or through properties holding placeholders) more than ${maxDepth} deep`;

/** A path cut to a readable length for a message. */
function shortPath(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}...` : path;
}
