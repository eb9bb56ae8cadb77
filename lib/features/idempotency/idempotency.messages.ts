const PREFIX = 'resilience4nest';

/** A lease or TTL given to a store method is not a positive number of ms. */
export const INVALID_STORE_DURATION = (store: string, setting: string, value: unknown): string =>
  `${PREFIX}: ${store}: '${setting}' must be a positive number of milliseconds, got ${String(value)}`;

/** The store holds as many live keys as it may: the detail of the 503 a new key gets. */
export const STORE_FULL = 'the store holds as many keys as it may; a new key is accepted once the oldest expires';

/** `writeHead` got a flat header list whose last name has no value. */
export const ODD_HEADER_LIST = (length: number): string =>
  `${PREFIX}: writeHead: a flat header list alternates names and values, so its length must be even, got ${length} entries`;

/** A store option that must be a positive integer is not. */
export const INVALID_STORE_COUNT = (store: string, setting: string, value: unknown): string =>
  `${PREFIX}: ${store}: '${setting}' must be a positive integer, got ${String(value)}`;

/** The Postgres table option is not a (schema-qualified) SQL identifier. */
export const INVALID_TABLE_NAME = (table: string): string =>
  `${PREFIX}: PostgresIdempotencyStore: 'table' must be an identifier or schema.identifier of letters, digits and underscores, got ${JSON.stringify(table)}`;

/** A claim kept racing with concurrent releases and takeovers of the same key. */
export const CLAIM_DID_NOT_SETTLE = (store: string, key: string, attempts: number): string =>
  `${PREFIX}: ${store}: claim of idempotency key ${JSON.stringify(key)} did not settle after ${attempts} attempts under concurrent changes`;

/** A stored record could not be read back. */
export const CORRUPT_RECORD = (store: string, key: string): string =>
  `${PREFIX}: ${store}: the stored record of idempotency key ${JSON.stringify(key)} is not in this module's format`;

/** Place name of the module's `idempotency` section in configuration messages. */
export const IDEMPOTENCY_OPTIONS_PLACE = 'idempotency options';

/** Place name of one `@Idempotent` in configuration messages. */
export const idempotentPlace = (target: string): string => `@Idempotent on ${target}`;

/** `ttl` is shorter than `lease`: a record could vanish while its owner still runs. */
export const TTL_SHORTER_THAN_LEASE = (place: string, ttlMs: number, leaseMs: number): string =>
  `${PREFIX}: invalid configuration of ${place}: key 'ttl' (${ttlMs}ms) must be at least 'lease' (${leaseMs}ms), or a record could expire while its request still runs`;

/** A route's key comes from the header, so a `key` function there is a mistake. */
export const KEY_ON_ROUTE = (target: string, option: string): string =>
  `${PREFIX}: @Idempotent on ${target}: option '${option}' is for methods that are not HTTP routes (message handlers); on a route the key comes from the idempotency key header`;

/** A method that is not an HTTP route has no header to read its key from. */
export const KEY_REQUIRED = (target: string): string =>
  `${PREFIX}: @Idempotent on ${target} needs a 'key' option, e.g. @Idempotent({ key: (message) => message.id }): it is not an HTTP route, so there is no idempotency key header to read`;

/** Transactional mode needs a store that can complete a key inside the caller's transaction. */
export const STORE_NOT_TRANSACTIONAL = (target: string, store: string): string =>
  `${PREFIX}: @Idempotent on ${target} asks for 'transactional: true', but the idempotency store (${store}) cannot complete keys inside a database transaction; use PostgresIdempotencyStore with a pg Pool`;

/** The Postgres store was given something that cannot hand out connections. */
export const POOL_CANNOT_CONNECT = (): string =>
  `${PREFIX}: PostgresIdempotencyStore: transactional mode needs a pg Pool as 'pool' (something with connect()), got an object without connect()`;

/** An HTTP route has no principal choice: keys of different clients would share one namespace by accident. */
export const PRINCIPAL_REQUIRED = (target: string): string =>
  `${PREFIX}: @Idempotent on ${target} needs a principal (who is asking), so that one client's key never replays another client's answer. ` +
  `Choose one on the route, @Idempotent({ principal: (req) => req.user?.id }), or for every route with the module option idempotency.principal; ` +
  `or give principal: 'shared' to let every client share one key space on purpose`;

/** A keyed request's body is not parsed when the key is checked, so two different bodies would look the same. */
export const BODY_NOT_PARSED = (target: string, contentType: string): string =>
  `@Idempotent on ${target} cannot fingerprint this request: its body (${contentType}) is not parsed when the Idempotency-Key is checked ` +
  `(a multipart upload read by FileInterceptor, or a stream the handler reads itself), so a different body under the same key would get the first one's answer. ` +
  `Parse this content type before the route's interceptors run (a body parser or middleware), or send the body as JSON`;

/** The principal resolver found no caller in this request: its key cannot be scoped to anyone. */
export const PRINCIPAL_MISSING = (source: string): string =>
  `The request does not say who is asking: ${source} resolved to no principal, so its Idempotency-Key cannot be kept apart from other callers' keys. ` +
  `Authenticate the request, or choose principal: 'shared' to let every caller share one key space on purpose`;

/** A principal on a method that is not a route, whose key comes from its arguments. */
export const PRINCIPAL_NOT_ON_ROUTE = (target: string): string =>
  `${PREFIX}: @Idempotent on ${target}: option 'principal' is for HTTP routes; a method called with a 'key' option is scoped by the method, so put who is asking into the key`;

/** `principal` is neither a function nor `'shared'`. */
export const PRINCIPAL_EXPECTED = "a function of the request, e.g. (req) => req.user?.id, or 'shared'";

/** A store call failed: the detail of an `IdempotencyStoreUnavailableError` (the store's own error is its `cause`, never shown to clients). */
export const STORE_CALL_FAILED = (operation: string): string => `${operation} failed`;

/** A store call did not answer in time. */
export const STORE_CALL_TIMED_OUT = (operation: string, ms: number, byDeadline: boolean): string =>
  `${operation} did not answer within ${Math.ceil(ms)}ms (${byDeadline ? 'the time left before the request deadline' : 'storeTimeout'})`;

/** The Redis server the store uses keeps its data in memory only. */
export const REDIS_NOT_DURABLE = (seen: string): string =>
  `${PREFIX}: RedisIdempotencyStore: the Redis server has no append-only file (${seen}): a restart or failover loses keys still in progress, and their requests may run a second time. ` +
  `Turn on appendonly (appendfsync everysec or always) and replicate it; see docs/idempotency.md, "Redis durability"`;

/** A stale key was found and nobody can say whether its first attempt had its effect. */
export const NO_RECONCILER = (target: string): string =>
  `${PREFIX}: @Idempotent on ${target} found a key whose earlier attempt stopped without finishing; without a reconciler (option 'reconciler') it is not run again and requests with that key get 500 IdempotencyOutcomeUnknownError (no Retry-After) until the record expires`;

/** A helper that needs the current idempotent call was called outside of one. */
export const OUTSIDE_IDEMPOTENT_CALL = (helper: string): string =>
  `${PREFIX}: ${helper}() was called outside a method protected by @Idempotent (or before its key was claimed)`;

/** `idempotencyTransaction()` inside a method that is not transactional. */
export const NOT_TRANSACTIONAL = (target: string): string =>
  `${PREFIX}: idempotencyTransaction() was called in ${target}, whose @Idempotent is not transactional; add 'transactional: true'`;

/** The header is absent on a route that requires it. */
export const KEY_HEADER_MISSING = (header: string, method: string, path: string): string =>
  `The '${header}' header is required on ${method} ${path}`;

/** The header is present but not a valid key. */
export const KEY_HEADER_INVALID = (header: string, reason: string): string =>
  `The '${header}' header is malformed: ${reason}`;

/** The `key` function of a non-HTTP method returned nothing usable. */
export const KEY_FUNCTION_EMPTY = (target: string, value: unknown): string =>
  `@Idempotent on ${target}: the 'key' option returned ${typeof value === 'string' ? JSON.stringify(value) : String(value)}, not a non-empty string`;

/** The business transaction of a transactional call did not commit. */
export const TRANSACTION_NOT_COMMITTED = (target: string): string =>
  `The transaction of ${target} did not commit; nothing was stored and the idempotency key was released`;

/** A value passed to the fingerprint refers to itself. */
export const CYCLIC_FINGERPRINT = (target: string): string =>
  `${PREFIX}: @Idempotent on ${target}: the value to fingerprint contains a cycle; give a 'fingerprint' option that picks the payload`;

/** A user's `onStatus` threw; the key is kept, as for any outcome nobody could name. */
export const ON_STATUS_FAILED = (target: string, status: number, error: unknown): string =>
  `${PREFIX}: @Idempotent on ${target}: 'onStatus' threw for status ${status} (${error instanceof Error ? error.message : String(error)}); the key is kept for reconciliation`;
