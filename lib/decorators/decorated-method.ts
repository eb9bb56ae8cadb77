/** A method a decorator may stand on, as `TypedPropertyDescriptor` gives it. */
export type DecoratedMethod = (...args: never[]) => unknown;
