import { javaException } from './java-exceptions';

/** An error class, as accepted by exception lists and `@Fallback`. */
export type ErrorClass<E = unknown> = abstract new (...args: never[]) => E;

/**
 * An entry of `retryExceptions`, `ignoreExceptions` or `recordExceptions`:
 * a class, or a class name (a dotted Java name matches on its last segment,
 * and a well-known Java name also matches the Node errors it stands for: see
 * its table of Java exceptions).
 */
export type ErrorClassOrName = ErrorClass | string;

/**
 * Matches errors against a list of classes and class names. A name matches
 * an error whose class, or any ancestor class, has that name; a Java name of
 * its table of Java exceptions (`java.io.IOException`) also matches the errors of
 * the condition it stands for (connection errors).
 */
export class ErrorMatcher {
  private readonly classes: Set<unknown>;
  private readonly names: Set<string>;
  private readonly conditions: ReadonlyArray<(error: unknown) => boolean>;

  /** True when the list was empty. */
  readonly empty: boolean;

  /** @param entries - classes or class names */
  constructor(entries: readonly ErrorClassOrName[] = []) {
    this.classes = new Set(entries.filter((e) => typeof e === 'function'));
    this.names = new Set(
      entries.filter((e): e is string => typeof e === 'string').map((n) => n.slice(n.lastIndexOf('.') + 1)),
    );
    this.conditions = [
      ...new Set(
        entries
          .flatMap((e) => (typeof e === 'string' ? [javaException(e)?.matches] : []))
          .filter((m) => m !== undefined),
      ),
    ];
    this.empty = entries.length === 0;
  }

  /** True when `error`'s class or one of its ancestors is in the list. */
  matches(error: unknown): boolean {
    if (this.empty || error === null || typeof error !== 'object') return false;
    for (
      let proto = Object.getPrototypeOf(error) as { constructor: unknown } | null;
      proto && proto !== Object.prototype;
      proto = Object.getPrototypeOf(proto) as { constructor: unknown } | null
    ) {
      const ctor = proto.constructor;
      if (this.classes.has(ctor) || (typeof ctor === 'function' && this.names.has(ctor.name))) return true;
    }
    for (const condition of this.conditions) if (condition(error)) return true;
    return false;
  }
}
