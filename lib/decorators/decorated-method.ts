/** A method a decorator may stand on, as `TypedPropertyDescriptor` gives it. */
export type DecoratedMethod = (...args: never[]) => unknown;

/** The parameters of a method, as a tuple. */
export type ParametersOf<M> = M extends (...args: infer P) => unknown ? P : never;
