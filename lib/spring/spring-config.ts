import { readResilience4jPart } from './spring-document';
import { resolveOptions, withSectionNames } from '../registry/resolve-options';
import { ResilienceModuleOptions } from '../options/resilience.options';

/** How `fromSpringConfig` binds a file. */
export interface SpringConfigOptions {
  /**
   * A key Spring's binder ignores (a typo, a Resilience4j 0.x property, a
   * key the property class does not have): `warn` (default, as Spring: the
   * application starts, with one warning naming the key, where it sits and
   * what happens instead) or `error` (it fails startup, as native options do).
   */
  unknownKeys?: 'warn' | 'error';
}

/**
 * The module options of a Spring Boot `application.yml`: its `resilience4j`
 * part, read and bound the way Spring reads and binds it — dotted keys at
 * any depth (`resilience4j.circuitbreaker:` as a root key), camelCase,
 * kebab-case or snake_case keys, `${ENV_VAR:default}` placeholders, the
 * documents of a multi-document file that apply (those without a profile,
 * then those of the profiles in `SPRING_PROFILES_ACTIVE`), instance names
 * written without brackets stripped to letters, digits and `-`, an empty
 * value read as no value, and keys Spring's binder ignores accepted with a
 * warning. The options carry `binding: 'spring'`, so the file means what it
 * means under Resilience4j: where this module's defaults differ on purpose
 * (jitter, the default retryable set, 4xx answers as successes, the bounded
 * bulkhead queue), Resilience4j's apply. Sections come back under this
 * module's names (`circuitbreaker` → `circuitBreaker`), their keys as
 * written. The options are checked here, so a bad value fails at this call;
 * warnings are given once each when the options are used (`forRoot`).
 *
 * A placeholder names an environment variable (own variables only) or
 * another property, whose placeholders are resolved in turn; a ring of
 * them, an unclosed `${` or a name with neither value nor default fails.
 * Messages quote a value from a placeholder as written (`${DB_PASSWORD}`)
 * and never the value of a key that names a credential. A document holds
 * at most 1,048,576 characters and 100,000 keys and list items, nested at
 * most 64 deep; a map or list shared by YAML aliases is read once. The call
 * takes time linear in the document.
 *
 * @param document - the file's text (`.yml` needs the optional peer `yaml`;
 *   `.properties` text is read as it is), or the object a YAML parser made of it
 * @param options - how strictly to bind it
 * @throws Error naming the key and value when the part is missing or invalid
 *
 * @example
 * ```ts
 * ResilienceModule.forRoot(fromSpringConfig(readFileSync('application.yml', 'utf8')))
 * ```
 */
export function fromSpringConfig(
  document: object | string,
  options: SpringConfigOptions = {},
): ResilienceModuleOptions {
  const sections = withSectionNames(readResilience4jPart(document)) as ResilienceModuleOptions;
  const bound: ResilienceModuleOptions = { binding: 'spring', ...sections };
  if (options.unknownKeys !== undefined) bound.unknownKeys = options.unknownKeys;
  resolveOptions(bound, () => undefined);
  return bound;
}
