/** A plain object (a YAML map or an object literal), not a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  // Any realm's Object.prototype (its own prototype is null), so objects from a vm context count too.
  return proto === null || Object.getPrototypeOf(proto) === null;
}
