import { BulkheadFullError, CallNotPermittedError, RateLimitedError, TimeoutExceededError } from './errors';
import { httpStatusOf, isConnectionError } from './error-status';

/** A Java exception class that Spring configs list, and the Node errors it stands for here. */
export interface JavaException {
  /** Fully qualified Java name, e.g. `java.io.IOException`. */
  readonly name: string;
  /** What it matches here, in words (for docs and warnings). */
  readonly meaning: string;
  /** True for an error of the condition the Java class stands for. */
  readonly matches: (error: unknown) => boolean;
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
const isTimeout = (error: unknown): boolean => error instanceof TimeoutExceededError || named(error, 'TimeoutError');

const CONNECTION =
  'connection errors (ECONNRESET, ECONNREFUSED, ETIMEDOUT, EPIPE, EAI_AGAIN, ECONNABORTED, a failed fetch)';
const ANY_STATUS = 'errors carrying any HTTP status';

const connection = (name: string): JavaException => ({ name, meaning: CONNECTION, matches: isConnectionError });
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
  connection('java.io.IOException'),
  connection('java.io.UncheckedIOException'),
  connection('java.net.ConnectException'),
  connection('java.net.SocketException'),
  connection('java.net.SocketTimeoutException'),
  connection('java.net.UnknownHostException'),
  connection('java.net.http.HttpConnectTimeoutException'),
  {
    name: 'java.util.concurrent.TimeoutException',
    meaning: 'timeouts (TimeoutExceededError, an AbortSignal.timeout() abort)',
    matches: isTimeout,
  },
  {
    name: 'java.net.http.HttpTimeoutException',
    meaning: 'timeouts (TimeoutExceededError, an AbortSignal.timeout() abort)',
    matches: isTimeout,
  },
  connection(`${SPRING_CLIENT}.ResourceAccessException`),
  anyStatus(`${SPRING_CLIENT}.RestClientResponseException`),
  anyStatus(`${SPRING_CLIENT}.HttpStatusCodeException`),
  serverStatus(`${SPRING_CLIENT}.HttpServerErrorException`),
  clientStatus(`${SPRING_CLIENT}.HttpClientErrorException`),
  anyStatus(`${SPRING_WEBCLIENT}.WebClientResponseException`),
  connection(`${SPRING_WEBCLIENT}.WebClientRequestException`),
  anyStatus('feign.FeignException'),
  serverStatus('feign.FeignException$FeignServerException'),
  clientStatus('feign.FeignException$FeignClientException'),
  connection('feign.RetryableException'),
  {
    name: 'io.github.resilience4j.circuitbreaker.CallNotPermittedException',
    meaning: 'CallNotPermittedError',
    matches: (e) => e instanceof CallNotPermittedError,
  },
  {
    name: 'io.github.resilience4j.bulkhead.BulkheadFullException',
    meaning: 'BulkheadFullError',
    matches: (e) => e instanceof BulkheadFullError,
  },
  {
    name: 'io.github.resilience4j.ratelimiter.RequestNotPermitted',
    meaning: 'RateLimitedError',
    matches: (e) => e instanceof RateLimitedError,
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
