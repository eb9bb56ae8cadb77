import { UseInterceptors } from '@nestjs/common';
import { addLayer } from '../../decorators/metadata';
import { idempotentPlace } from './idempotency.messages';
import type { DecoratedMethod } from '../../decorators/decorated-method';
import { checkIdempotentOptions, IdempotentFingerprint, IdempotentKey, IdempotentOptions } from './idempotency.options';
import { IdempotencyInterceptor } from './idempotency.interceptor';

/** A reader of the arguments of the method `M` (a `key` or `fingerprint`), answering `T`. */
export type IdempotentArgumentReader<M extends DecoratedMethod, T> = (...args: Parameters<M>) => T;

/**
 * What `tsc` names when a `key` or `fingerprint` of `@Idempotent` cannot
 * read the arguments of the method it stands on: `Expected` is the reader
 * type the method needs.
 */
export interface IdempotentReaderMismatch<Expected> {
  /** The type `key` (and, answering anything, `fingerprint`) should have had. */
  readonly 'key and fingerprint must be assignable to': Expected;
}

/**
 * Makes a method safe to retry: a repeated request (or call) with the same
 * idempotency key gets the first one's answer instead of running again.
 *
 * On a controller route (POST and PATCH; other methods pass through) the
 * key is the `Idempotency-Key` header, scoped by principal, method and
 * path; the answer as serialized for the client is stored and replayed with
 * `Idempotent-Replayed: true`. A missing or malformed key is answered 400, a
 * key still running 409 with `Retry-After`, a key reused with another body
 * 422. On any other method (a message handler) give `key`; a duplicate call
 * returns the stored result, and refusals are thrown as
 * `IdempotencyKeyMissingError`, `IdempotencyKeyInProgressError` and
 * `IdempotencyKeyReuseError`.
 *
 * @example
 * ```ts
 * @Post('payments')
 * @Idempotent()
 * charge(@Body() payment: PaymentDto) { ... }
 *
 * @EventPattern('orders.created')
 * @Idempotent({ key: (event: OrderCreated) => event.id })
 * reserveStock(event: OrderCreated) { ... }
 * ```
 */
export function Idempotent<
  Key extends IdempotentKey = IdempotentKey,
  Fingerprint extends IdempotentFingerprint = IdempotentFingerprint,
>(
  options?: IdempotentOptions<Key, Fingerprint>,
): <M extends DecoratedMethod>(
  target: [Key, Fingerprint] extends [
    IdempotentArgumentReader<M, string | undefined>,
    IdempotentArgumentReader<M, unknown>,
  ]
    ? object
    : IdempotentReaderMismatch<IdempotentArgumentReader<M, string | undefined>>,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
export function Idempotent(options?: IdempotentOptions): MethodDecorator {
  return (target, key, descriptor) => {
    const owner = typeof target === 'function' ? target.name : (target as object).constructor?.name;
    const checked = checkIdempotentOptions(options, idempotentPlace(`${owner ?? 'anonymous'}.${String(key)}`));
    addLayer(target, key, descriptor, { kind: 'idempotent', options: checked, decorator: 'Idempotent' });
    // Replaying a status, headers and the serialized body needs the HTTP response, which only an interceptor sees.
    UseInterceptors(IdempotencyInterceptor)(target, key, descriptor as PropertyDescriptor);
  };
}
