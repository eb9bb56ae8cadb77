import { BulkheadFullError, CallNotPermittedError, RateLimitedError, TimeoutExceededError } from '../../kernel/errors';
import { httpStatusOf, isConnectionError } from '../../kernel/error-status';
import { ErrorClass, ErrorMatcher, ErrorNames } from '../../config/error-matcher';

/** A Java exception class that Spring configs list, and the Node errors it stands for here. */
export interface JavaException {
  /** Fully qualified Java name, e.g. `java.io.IOException`. */
  readonly name: string;
  /** What it matches here, in words (for docs and warnings). */
  readonly meaning: string;
  /** True for an error of the condition the Java class stands for. */
  readonly matches: (error: unknown) => boolean;
  /** This module's error class the Java class stands for, when it is one (Resilience4j's own exceptions). */
  readonly errorClass?: ErrorClass;
}

const anyError = (): boolean => true;
const statusIn =
  (low: number, high: number) =>
  (error: unknown): boolean => {
    const status = httpStatusOf(error);
    return status !== undefined && status >= low && status <= high;
  };
// DOMException is not an Error subclass in every realm, so aborts are told by their name.
const named = (error: unknown, name: string): boolean =>
  typeof error === 'object' && error !== null && (error as { name?: unknown }).name === name;
/** An `AbortSignal.timeout()` abort: fetch rejects with its TimeoutError, node:http with an AbortError caused by it. */
const isSignalTimeout = (error: unknown): boolean =>
  named(error, 'TimeoutError') ||
  (named(error, 'AbortError') && named((error as { cause?: unknown }).cause, 'TimeoutError'));
const isTimeout = (error: unknown): boolean => error instanceof TimeoutExceededError || isSignalTimeout(error);

/** The codes an error and its causes carry (`fetch` puts undici's in `cause`, axios copies Node's onto its own error). */
function hasCode(error: unknown, codes: ReadonlySet<string>): boolean {
  for (
    let e: unknown = error, depth = 0;
    e !== null && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

/** getaddrinfo's failures: the name did not resolve, or not now. */
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
/** No connection was made: refused, or no route to the host or its network. */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);
const NO_ROUTE_CODES = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);
/** An open connection failed: reset, broken pipe, closed by the other side (undici's socket errors). */
const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
/** A socket or HTTP client ran out of time (undici's connect, headers and body timeouts). */
const SOCKET_TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
const CONNECT_TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT']);

/** axios's own timeout (`timeout: ms`: ECONNABORTED "timeout of …ms exceeded"), or its cancel by an `AbortSignal.timeout()`. */
function isAxiosTimeout(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; message?: unknown; config?: { signal?: { reason?: unknown } } };
  if (e.code === 'ECONNABORTED' && typeof e.message === 'string' && e.message.includes('timeout')) return true;
  return e.code === 'ERR_CANCELED' && named(e.config?.signal?.reason, 'TimeoutError');
}

/** A socket-level timeout: Java's SocketTimeoutException. */
const isSocketTimeout = (error: unknown): boolean =>
  hasCode(error, SOCKET_TIMEOUT_CODES) || isAxiosTimeout(error) || isSignalTimeout(error);

/** Any I/O failure of a call: Java's IOException and the client exceptions that wrap one. */
const isIoFailure = (error: unknown): boolean =>
  isConnectionError(error) ||
  hasCode(error, DNS_CODES) ||
  hasCode(error, CONNECT_CODES) ||
  hasCode(error, SOCKET_CODES) ||
  isSocketTimeout(error);

const IO =
  'I/O failures: connection errors (ECONNREFUSED, ECONNRESET, EPIPE, ECONNABORTED, EHOSTUNREACH, ENETUNREACH, a failed fetch, undici UND_ERR_SOCKET), DNS failures (ENOTFOUND, EAI_AGAIN) and socket timeouts (ETIMEDOUT, undici UND_ERR_*_TIMEOUT, an axios timeout, an AbortSignal.timeout() abort)';
const SOCKET =
  'connection and socket errors: ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ECONNRESET, EPIPE, ECONNABORTED, undici UND_ERR_SOCKET';
const SOCKET_TIMEOUT =
  'socket timeouts: ETIMEDOUT, undici UND_ERR_CONNECT_TIMEOUT, UND_ERR_HEADERS_TIMEOUT and UND_ERR_BODY_TIMEOUT, an axios timeout, an AbortSignal.timeout() abort';
const TIMEOUTS = 'timeouts (TimeoutExceededError, an AbortSignal.timeout() abort)';
const ANY_STATUS = 'errors carrying any HTTP status';

const io = (name: string): JavaException => ({ name, meaning: IO, matches: isIoFailure });
const anyStatus = (name: string): JavaException => ({ name, meaning: ANY_STATUS, matches: statusIn(100, 599) });
const clientStatus = (name: string): JavaException => ({
  name,
  meaning: 'errors carrying an HTTP 4xx status',
  matches: statusIn(400, 499),
});
const serverStatus = (name: string): JavaException => ({
  name,
  meaning: 'errors carrying an HTTP 5xx status',
  matches: statusIn(500, 599),
});

const SPRING_CLIENT = 'org.springframework.web.client';
const SPRING_WEBCLIENT = 'org.springframework.web.reactive.function.client';

/** The nested status classes of Spring's and Feign's HTTP exceptions (`HttpServerErrorException$ServiceUnavailable`). */
const STATUS_SUBCLASSES: Readonly<Record<string, number>> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  Conflict: 409,
  Gone: 410,
  UnsupportedMediaType: 415,
  UnprocessableEntity: 422,
  TooManyRequests: 429,
  InternalServerError: 500,
  NotImplemented: 501,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504,
};
const STATUS_PARENTS = [
  `${SPRING_CLIENT}.HttpClientErrorException`,
  `${SPRING_CLIENT}.HttpServerErrorException`,
  `${SPRING_WEBCLIENT}.WebClientResponseException`,
  'feign.FeignException',
];

/**
 * The Java exception names a Spring `application.yml` lists, mapped to the
 * Node conditions they stand for. A name in an exception list matches an
 * error of that condition, and still any error whose class (or an ancestor
 * class) has the same simple name.
 */
export const JAVA_EXCEPTIONS: readonly JavaException[] = [
  { name: 'java.lang.Throwable', meaning: 'every error', matches: anyError },
  { name: 'java.lang.Exception', meaning: 'every error', matches: anyError },
  { name: 'java.lang.RuntimeException', meaning: 'every error', matches: anyError },
  io('java.io.IOException'),
  io('java.io.UncheckedIOException'),
  {
    name: 'java.net.SocketException',
    meaning: SOCKET,
    // axios reports its own timeout as ECONNABORTED: a SocketTimeoutException, which is no SocketException.
    matches: (e) => !isAxiosTimeout(e) && (hasCode(e, CONNECT_CODES) || hasCode(e, SOCKET_CODES)),
  },
  {
    name: 'java.net.ConnectException',
    meaning: 'no connection made: ECONNREFUSED, EHOSTUNREACH, ENETUNREACH',
    matches: (e) => hasCode(e, CONNECT_CODES),
  },
  {
    name: 'java.net.NoRouteToHostException',
    meaning: 'no route to the host: EHOSTUNREACH, ENETUNREACH',
    matches: (e) => hasCode(e, NO_ROUTE_CODES),
  },
  {
    name: 'java.net.UnknownHostException',
    meaning: 'DNS failures: ENOTFOUND, EAI_AGAIN',
    matches: (e) => hasCode(e, DNS_CODES),
  },
  { name: 'java.net.SocketTimeoutException', meaning: SOCKET_TIMEOUT, matches: isSocketTimeout },
  {
    name: 'java.net.http.HttpConnectTimeoutException',
    meaning: 'connect timeouts: undici UND_ERR_CONNECT_TIMEOUT',
    matches: (e) => hasCode(e, CONNECT_TIMEOUT_CODES),
  },
  { name: 'java.util.concurrent.TimeoutException', meaning: TIMEOUTS, matches: isTimeout },
  {
    name: 'java.net.http.HttpTimeoutException',
    meaning: `${TIMEOUTS} and ${SOCKET_TIMEOUT}`,
    matches: (e) => isTimeout(e) || isSocketTimeout(e),
  },
  io(`${SPRING_CLIENT}.ResourceAccessException`),
  anyStatus(`${SPRING_CLIENT}.RestClientResponseException`),
  anyStatus(`${SPRING_CLIENT}.HttpStatusCodeException`),
  serverStatus(`${SPRING_CLIENT}.HttpServerErrorException`),
  clientStatus(`${SPRING_CLIENT}.HttpClientErrorException`),
  anyStatus(`${SPRING_WEBCLIENT}.WebClientResponseException`),
  io(`${SPRING_WEBCLIENT}.WebClientRequestException`),
  anyStatus('feign.FeignException'),
  serverStatus('feign.FeignException$FeignServerException'),
  clientStatus('feign.FeignException$FeignClientException'),
  io('feign.RetryableException'),
  {
    name: 'io.github.resilience4j.circuitbreaker.CallNotPermittedException',
    meaning: 'CallNotPermittedError',
    matches: (e) => e instanceof CallNotPermittedError,
    errorClass: CallNotPermittedError,
  },
  {
    name: 'io.github.resilience4j.bulkhead.BulkheadFullException',
    meaning: 'BulkheadFullError',
    matches: (e) => e instanceof BulkheadFullError,
    errorClass: BulkheadFullError,
  },
  {
    name: 'io.github.resilience4j.ratelimiter.RequestNotPermitted',
    meaning: 'RateLimitedError',
    matches: (e) => e instanceof RateLimitedError,
    errorClass: RateLimitedError,
  },
  {
    name: 'java.util.concurrent.CancellationException',
    meaning: 'aborted calls (AbortError)',
    matches: (e) => named(e, 'AbortError'),
  },
  ...STATUS_PARENTS.flatMap((parent) =>
    Object.entries(STATUS_SUBCLASSES).map(([sub, status]): JavaException => ({
      name: `${parent}$${sub}`,
      meaning: `errors carrying HTTP status ${status}`,
      matches: (e) => httpStatusOf(e) === status,
    })),
  ),
];

const BY_NAME = new Map<string, JavaException>();
for (const entry of JAVA_EXCEPTIONS) {
  BY_NAME.set(entry.name, entry);
  // Spring also binds nested classes written with a dot, and a bare simple name means the same class.
  BY_NAME.set(entry.name.replace('$', '.'), entry);
  BY_NAME.set(entry.name.slice(entry.name.lastIndexOf('.') + 1), entry);
}

/** The mapping of a Java exception name (fully qualified, `Outer$Inner`, `Outer.Inner` or simple), if it has one. */
export function javaException(name: string): JavaException | undefined {
  return BY_NAME.get(name.trim());
}

/** Packages whose classes only a JVM throws: a name there that has no mapping matches nothing in Node. */
const JVM_PACKAGES =
  /^(java|javax|jakarta|kotlin|scala|org\.springframework|io\.github\.resilience4j|feign|reactor|io\.netty|io\.grpc|org\.apache|org\.hibernate|com\.fasterxml|okhttp3|retrofit2|com\.netflix|io\.micrometer|org\.eclipse\.jetty|io\.undertow|com\.zaxxer|org\.postgresql|com\.mysql|com\.mongodb|redis\.clients|io\.lettuce|software\.amazon|com\.amazonaws|com\.google)\./;

/** True for a JVM class name with no Node equivalent: it matches only an error class of the same simple name. */
export function isForeignJavaName(name: string): boolean {
  return JVM_PACKAGES.test(name.trim()) && javaException(name) === undefined;
}

/** The classes standing for mapped names, by name as written (trimmed): one per name, so lists bound twice are equal. */
const STAND_INS = new Map<string, ErrorClass>();

/**
 * The class standing for a mapped Java name in a bound exception list: its
 * `instanceof` is true for an error of the condition the name stands for,
 * and for an error whose class (or an ancestor class) has the name's simple
 * name; it is named as written, so configs and messages show the name. One
 * standing for Resilience4j's own exception extends the error class it
 * means (`BulkheadFullException` extends `BulkheadFullError`).
 *
 * @param name - a name of an exception list, as written
 */
export function javaErrorClass(name: string): ErrorClass | undefined {
  const written = name.trim();
  const known = STAND_INS.get(written);
  if (known !== undefined) return known;
  const entry = javaException(written);
  if (entry === undefined) return undefined;
  const sameName = new ErrorMatcher([written]);
  const decides = (error: unknown): boolean => entry.matches(error) || sameName.matches(error);
  const standIn =
    entry.errorClass === undefined
      ? class {
          static [Symbol.hasInstance](error: unknown): boolean {
            return decides(error);
          }
        }
      : class extends (entry.errorClass as new (...args: never[]) => object) {
          static override [Symbol.hasInstance](error: unknown): boolean {
            return decides(error);
          }
        };
  Object.defineProperty(standIn, 'name', { value: written });
  STAND_INS.set(written, standIn);
  return standIn;
}

/**
 * How a Spring config's exception lists are bound: the well-known Java names
 * become classes standing for the Node errors they mean ({@link javaErrorClass}),
 * and a JVM name with no mapping is warned about. The registry binds every
 * option's lists with it, those written in code included.
 */
export const JAVA_ERROR_NAMES: ErrorNames = { classOf: javaErrorClass, isForeign: isForeignJavaName };
