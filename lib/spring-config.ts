import { readResilience4jPart } from './config/spring-document';
import { resolveOptions, withSectionNames } from './resolve-options';
import { ResilienceModuleOptions } from './resilience.options';

/**
 * The module options of a Spring Boot `application.yml`: its `resilience4j`
 * part, read the way Spring reads it — dotted keys at any depth
 * (`resilience4j.circuitbreaker:` as a root key), camelCase, kebab-case or
 * snake_case keys, `${ENV_VAR:default}` placeholders, and the documents of a
 * multi-document file that apply (those without a profile, then those of the
 * profiles in `SPRING_PROFILES_ACTIVE`). Sections come back under this
 * module's names (`circuitbreaker` → `circuitBreaker`), their keys as
 * written. The options are checked here, so a bad value fails at this call;
 * properties that have no effect here are warned about once each when the
 * options are used (`forRoot`).
 *
 * @param document - the file's text (`.yml` needs the optional peer `yaml`;
 *   `.properties` text is read as it is), or the object a YAML parser made of it
 * @throws Error naming the key and value when the part is missing or invalid
 *
 * @example
 * ```ts
 * ResilienceModule.forRoot(fromSpringConfig(readFileSync('application.yml', 'utf8')))
 * ```
 */
export function fromSpringConfig(document: object | string): ResilienceModuleOptions {
  const options = withSectionNames(readResilience4jPart(document)) as ResilienceModuleOptions;
  resolveOptions(options, () => undefined);
  return options;
}
