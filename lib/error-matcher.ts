/** An error class, as accepted by exception lists and `@Fallback`. */
export type ErrorClass<E = unknown> = abstract new (...args: any[]) => E;

/**
 * An entry of `retryExceptions`, `ignoreExceptions` or `recordExceptions`:
 * a class, or a class name (a dotted Java name matches on its last segment).
 */
export type ErrorClassOrName = ErrorClass | string;

/**
 * Matches errors against a list of classes and class names. A name matches
 * an error whose class, or any ancestor class, has that name.
 */
export class ErrorMatcher {
  private readonly classes: Set<unknown>;
  private readonly names: Set<string>;

  /** True when the list was empty. */
  readonly empty: boolean;

  /** @param entries classes or class names */
  constructor(entries: readonly ErrorClassOrName[] = []) {
    this.classes = new Set(entries.filter((e) => typeof e === 'function'));
    this.names = new Set(
      entries.filter((e): e is string => typeof e === 'string').map((n) => n.slice(n.lastIndexOf('.') + 1)),
    );
    this.empty = entries.length === 0;
  }

  /** True when `error`'s class or one of its ancestors is in the list. */
  matches(error: unknown): boolean {
    if (this.empty || error === null || typeof error !== 'object') return false;
    for (let proto = Object.getPrototypeOf(error); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      const ctor = proto.constructor;
      if (this.classes.has(ctor) || (typeof ctor === 'function' && this.names.has(ctor.name))) return true;
    }
    return false;
  }
}
