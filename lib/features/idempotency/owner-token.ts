import { randomFillSync } from 'node:crypto';

/** Random bits in an owner token: as unguessable as a version-4 UUID (122 bits), in 22 characters. */
export const OWNER_TOKEN_BITS = 128;

const TOKEN_BYTES = OWNER_TOKEN_BITS / 8;

/** Tokens drawn from one fill of the pool; one `randomFillSync` serves this many claims. */
const TOKENS_PER_FILL = 256;

const pool = Buffer.alloc(TOKEN_BYTES * TOKENS_PER_FILL);
let offset = pool.length;

/**
 * A new owner token: 128 bits from the operating system's CSPRNG, as 22
 * base64url characters (no padding). The string is flat and about 40 bytes
 * on the heap, where `randomUUID()`'s concatenated string holds some 480;
 * every store keeps it as is (a `text` column, a JSON field in Redis).
 *
 * @internal
 */
export function ownerToken(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
