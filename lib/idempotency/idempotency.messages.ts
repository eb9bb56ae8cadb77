const PREFIX = 'resilience4nest';

/** A lease or TTL given to a store method is not a positive number of ms. */
export const INVALID_STORE_DURATION = (store: string, setting: string, value: unknown): string =>
  `${PREFIX}: ${store}: '${setting}' must be a positive number of milliseconds, got ${String(value)}`;

/** The Postgres table option is not a (schema-qualified) SQL identifier. */
export const INVALID_TABLE_NAME = (table: string): string =>
  `${PREFIX}: PostgresIdempotencyStore: 'table' must be an identifier or schema.identifier of letters, digits and underscores, got ${JSON.stringify(table)}`;

/** A claim kept racing with concurrent releases and takeovers of the same key. */
export const CLAIM_DID_NOT_SETTLE = (store: string, key: string, attempts: number): string =>
  `${PREFIX}: ${store}: claim of idempotency key ${JSON.stringify(key)} did not settle after ${attempts} attempts under concurrent changes`;

/** A stored record could not be read back. */
export const CORRUPT_RECORD = (store: string, key: string): string =>
  `${PREFIX}: ${store}: the stored record of idempotency key ${JSON.stringify(key)} is not in this module's format`;
