/** An error class, as accepted by exception lists and `@Fallback`. */
export type ErrorClass<E = unknown> = abstract new (...args: never[]) => E;

/**
 * An entry of `retryExceptions`, `ignoreExceptions` or `recordExceptions`:
 * a class, or a class name (a dotted Java name matches on its last segment,
 * and a well-known Java name also matches the Node errors it stands for: see
 * the table of Java exceptions in docs/migrating-from-resilience4j.md).
 */
export type ErrorClassOrName = ErrorClass | string;

/**
 * How the names of an exception list are bound when options are read: a
 * name the binding knows is replaced by a class standing for it, whose
 * `Symbol.hasInstance` tells the errors it means. The options layer gives
 * one (the Java names of a Spring config); the matcher itself knows no names.
 */
export interface ErrorNames {
  /** The class standing for `name`, if the binding maps it; the same class for the same name. */
  classOf(name: string): ErrorClass | undefined;
  /** True for a name that can match no error of this process (it is warned about). */
  isForeign(name: string): boolean;
}

/** `list` with each name that `names` maps replaced by the class standing for it. */
export function bindErrorNames(list: readonly ErrorClassOrName[], names: ErrorNames): ErrorClassOrName[] {
  return list.map((entry) => (typeof entry === 'string' ? (names.classOf(entry) ?? entry) : entry));
}

/** True for a class that decides `instanceof` itself (`static [Symbol.hasInstance]`), as a class standing for a name does. */
const decidesInstanceOf = (entry: ErrorClassOrName): entry is ErrorClass =>
  typeof entry === 'function' && Object.hasOwn(entry, Symbol.hasInstance);

/**
 * Matches errors against a list of classes and class names. A class matches
 * its instances (as `instanceof` tells them: a class with its own
 * `Symbol.hasInstance`, such as one standing for a Java name, decides
 * itself); a name matches an error whose class, or any ancestor class, has
 * that name (a dotted name matches on its last segment).
 */
export class ErrorMatcher {
  private readonly classes: Set<unknown>;
  private readonly names: Set<string>;
  private readonly deciding: readonly ErrorClass[];

  /** True when the list was empty. */
  readonly empty: boolean;

  /** @param entries - classes or class names */
  constructor(entries: readonly ErrorClassOrName[] = []) {
    this.deciding = entries.filter(decidesInstanceOf);
    this.classes = new Set(entries.filter((e) => typeof e === 'function' && !decidesInstanceOf(e)));
    this.names = new Set(
      entries.filter((e): e is string => typeof e === 'string').map((n) => n.slice(n.lastIndexOf('.') + 1)),
    );
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
    for (const entry of this.deciding) if (error instanceof entry) return true;
    return false;
  }
}
