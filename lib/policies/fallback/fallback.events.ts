import type { ErrorClass } from '../../config/error-matcher';

/** A fallback answered instead of the method. */
export interface FallbackEvent {
  /** The fallback policy's name (usually the method it guards). */
  readonly name: string;
  /** The declared class whose handler ran, i.e. the kind of fallback. */
  readonly errorClass: ErrorClass;
  /** The error the method failed with. */
  readonly error: unknown;
}
