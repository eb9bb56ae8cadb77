import { describe } from '../../config/config.messages';
import { PREFIX } from '../../kernel/resilience.messages';

/** Bootstrap error: two `@Fallback` entries on one method name the same error class. */
export const DUPLICATE_FALLBACK = (name: string, errorClass: string): string =>
  `${PREFIX}: @Fallback on ${name}: error class ${errorClass} has more than one handler; give each class exactly one`;

export const FALLBACK_BAD_ERRORS = (where: string, errors: unknown): string =>
  `${PREFIX}: @Fallback on ${where} needs an error class or a non-empty list of error classes, got ${describe(errors)}`;

export const FALLBACK_BAD_HANDLER = (where: string, handler: unknown): string =>
  `${PREFIX}: @Fallback on ${where} needs a handler method name or a function, got ${describe(handler)}`;

export const FALLBACK_HANDLER_MISSING = (where: string, handler: string): string =>
  `${PREFIX}: @Fallback on ${where} names handler '${handler}', which is not a method of the class`;
