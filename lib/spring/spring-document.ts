import type * as Yaml from 'yaml';
import { loadOptionalPeer, OptionalPeer } from '../kernel/optional-peer';
import { NO_RESILIENCE4J_PART, NOT_A_SPRING_DOCUMENT } from '../config/config.messages';
import { checkDocument, checkDocumentText, checkYamlNesting } from '../config/document-limits';
import { PlaceholderResolver } from './placeholders';
import { canonicalKey, setOwn, unflatten } from '../config/relaxed-binding';
import { isPlainObject } from '../config/plain-object';

/** yaml: parses `application.yml` text for `fromSpringConfig`. */
export const YAML: OptionalPeer<typeof Yaml> = {
  name: 'yaml',
  // Loaded on first use, never imported: an absent optional peer fails only the feature that needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('yaml'),
  explicitly: 'parse the text with a YAML parser yourself and pass the object it gives to fromSpringConfig',
};

/**
 * The `resilience4j` part of a Spring Boot `application.yml` or
 * `application.properties`, read the way Spring reads it: dotted keys at any
 * depth, `${ENV_VAR:default}` placeholders resolved, and the documents of a
 * multi-document file that apply (those without a profile, then those of the
 * profiles in `SPRING_PROFILES_ACTIVE`) merged. Keys stay as written.
 * A document beyond the limits of `document-limits.ts` is refused before
 * anything recurses into it.
 *
 * @param document - the file's text (`.yml` needs the optional peer `yaml`), or the object a YAML parser made of it
 * @throws Error naming the key and value when the part is missing or is not a map of properties, or naming the limit and where when the document is too large or too deep
 */
export function readResilience4jPart(document: object | string): Record<string, unknown> {
  const parsed = typeof document === 'string' ? parseText(document) : document;
  if (!isPlainObject(parsed))
    throw new Error(
      NOT_A_SPRING_DOCUMENT(`expected a map of properties, got ${Array.isArray(parsed) ? 'a list' : typeof parsed}`),
    );
  if (typeof document !== 'string') checkDocument(parsed);
  const tree = unflatten(parsed) as Record<string, unknown>;
  const rootKey = Object.keys(tree).find((k) => canonicalKey(k) === 'resilience4j');
  if (rootKey === undefined) throw new Error(NO_RESILIENCE4J_PART(Object.keys(tree)));
  const part = new PlaceholderResolver(tree).resolveAll(tree[rootKey], rootKey);
  if (!isPlainObject(part)) throw new Error(NOT_A_SPRING_DOCUMENT(`its '${rootKey}' part is not a map of properties`));
  return part;
}

function parseText(text: string): unknown {
  checkDocumentText(text);
  if (looksLikeProperties(text)) {
    const properties = parseProperties(text);
    checkDocument(properties);
    return properties;
  }
  checkYamlNesting(text);
  const yaml = loadOptionalPeer(YAML, 'fromSpringConfig(text) (reading application.yml text)');
  const documents = yaml.parseAllDocuments(text);
  const list = Array.isArray(documents) ? documents : [documents];
  for (const doc of list) if (doc.errors.length > 0) throw new Error(NOT_A_SPRING_DOCUMENT(doc.errors[0].message));
  const active = (process.env.SPRING_PROFILES_ACTIVE ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  let merged: Record<string, unknown> = {};
  for (const doc of list) {
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    checkDocument(value);
    if (!isPlainObject(value))
      throw new Error(
        NOT_A_SPRING_DOCUMENT(
          `a document is ${Array.isArray(value) ? 'a list' : `a ${typeof value}`}, not a map of properties`,
        ),
      );
    const tree = unflatten(value) as Record<string, unknown>;
    const profiles = profilesOf(tree);
    if (profiles === undefined || profiles.some((p) => active.includes(p))) merged = overlay(merged, tree);
  }
  return merged;
}

/** `key=value` lines (an application.properties file) rather than YAML. */
function looksLikeProperties(text: string): boolean {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('!'));
  return lines.length > 0 && lines.every((l) => /^[^\s:=]+\s*=/.test(l));
}

function parseProperties(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const line of text.split(/\r?\n/)) {
    const l = line.trim();
    if (l === '' || l.startsWith('#') || l.startsWith('!')) continue;
    const at = l.indexOf('=');
    setOwn(out, l.slice(0, at).trim(), l.slice(at + 1).trim());
  }
  return out;
}

/** The profiles a document applies to (`spring.config.activate.on-profile`, or 2.3's `spring.profiles`); undefined when it always applies. */
function profilesOf(tree: Record<string, unknown>): string[] | undefined {
  const spring = child(tree, 'spring');
  const value = child(child(child(spring, 'config'), 'activate'), 'onProfile') ?? child(spring, 'profiles');
  if (typeof value === 'string') return value.split(',').map((p) => p.trim());
  if (Array.isArray(value)) return value.map(String);
  return undefined;
}

function child(node: unknown, key: string): unknown {
  if (!isPlainObject(node)) return undefined;
  const found = Object.keys(node).find((k) => canonicalKey(k) === canonicalKey(key));
  return found === undefined ? undefined : node[found];
}

/** A later document's properties replace an earlier one's, map by map (Spring's order). */
function overlay(base: Record<string, unknown>, top: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(top)) {
    const existing = Object.hasOwn(out, key) ? out[key] : undefined;
    setOwn(out, key, isPlainObject(existing) && isPlainObject(value) ? overlay(existing, value) : value);
  }
  return out;
}
