/** Bootstrap error: two `@Fallback` entries on one method name the same error class. */
export const DUPLICATE_FALLBACK = (name: string, errorClass: string): string =>
  `Fallback '${name}': error class ${errorClass} has more than one handler; give each class exactly one`;
