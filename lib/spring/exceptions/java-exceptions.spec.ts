import { bindErrorNames, ErrorMatcher } from '../../config/error-matcher';
import { BulkheadFullError, CallNotPermittedError, RateLimitedError, TimeoutExceededError } from '../../kernel/errors';
import { isForeignJavaName, JAVA_ERROR_NAMES, JAVA_EXCEPTIONS, javaException } from './java-exceptions';

/** The matcher of a list bound as the registry binds it. */
const bound = (names: string[]): ErrorMatcher => new ErrorMatcher(bindErrorNames(names, JAVA_ERROR_NAMES));

const status = (code: number): Error => Object.assign(new Error(`HTTP ${code}`), { status: code });
const connection = (code: string): Error => Object.assign(new Error(code), { code });
const fetchFailed = (): Error => new TypeError('fetch failed', { cause: connection('ECONNREFUSED') });

const SAMPLES: Record<string, unknown> = {
  'HTTP 404': status(404),
  'HTTP 500': status(500),
  'HTTP 503': status(503),
  ECONNREFUSED: connection('ECONNREFUSED'),
  'fetch failed': fetchFailed(),
  TimeoutExceededError: new TimeoutExceededError('t', 100),
  'AbortSignal.timeout': new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
  AbortError: new DOMException('This operation was aborted', 'AbortError'),
  CallNotPermittedError: new CallNotPermittedError('b', 'OPEN', 1000),
  BulkheadFullError: new BulkheadFullError('k', 'queue-full'),
  RateLimitedError: new RateLimitedError('r', 1000),
  'plain Error': new Error('bug'),
};

/** What each documented name matches among the samples (the table in docs/migrating-from-resilience4j.md). */
const EXPECTED: Record<string, string[]> = {
  'java.lang.Exception': Object.keys(SAMPLES),
  'java.io.IOException': ['ECONNREFUSED', 'fetch failed', 'AbortSignal.timeout'],
  'java.net.ConnectException': ['ECONNREFUSED', 'fetch failed'],
  'java.net.SocketTimeoutException': ['AbortSignal.timeout'],
  'java.net.UnknownHostException': [],
  'java.util.concurrent.TimeoutException': ['TimeoutExceededError', 'AbortSignal.timeout'],
  'org.springframework.web.client.HttpServerErrorException': ['HTTP 500', 'HTTP 503'],
  'org.springframework.web.client.HttpClientErrorException': ['HTTP 404'],
  'org.springframework.web.reactive.function.client.WebClientResponseException': ['HTTP 404', 'HTTP 500', 'HTTP 503'],
  'org.springframework.web.client.ResourceAccessException': ['ECONNREFUSED', 'fetch failed', 'AbortSignal.timeout'],
  'feign.FeignException': ['HTTP 404', 'HTTP 500', 'HTTP 503'],
  'org.springframework.web.client.HttpServerErrorException$ServiceUnavailable': ['HTTP 503'],
  'feign.FeignException.NotFound': ['HTTP 404'],
  'io.github.resilience4j.circuitbreaker.CallNotPermittedException': ['CallNotPermittedError'],
  'io.github.resilience4j.bulkhead.BulkheadFullException': ['BulkheadFullError'],
  'io.github.resilience4j.ratelimiter.RequestNotPermitted': ['RateLimitedError'],
  IOException: ['ECONNREFUSED', 'fetch failed', 'AbortSignal.timeout'],
};

describe('Java exception names', () => {
  it.each(Object.entries(EXPECTED))('%s matches %p', (name, expected) => {
    const matcher = bound([name]);
    expect(
      Object.entries(SAMPLES)
        .filter(([, error]) => matcher.matches(error))
        .map(([label]) => label),
    ).toEqual(expected);
  });

  it('still matches an application class of the same simple name', () => {
    class DataAccessException extends Error {}
    class IOException extends Error {}
    expect(bound(['org.springframework.dao.DataAccessException']).matches(new DataAccessException())).toBe(true);
    expect(bound(['java.io.IOException']).matches(new IOException())).toBe(true);
  });

  it('has one entry per name, each with a meaning', () => {
    const names = JAVA_EXCEPTIONS.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    for (const entry of JAVA_EXCEPTIONS) expect(entry.meaning.length).toBeGreaterThan(5);
  });

  it('tells JVM names with no Node equivalent from the application’s own names', () => {
    expect(isForeignJavaName('java.sql.SQLException')).toBe(true);
    expect(isForeignJavaName('org.springframework.dao.DataAccessException')).toBe(true);
    expect(isForeignJavaName('java.io.IOException')).toBe(false);
    expect(isForeignJavaName('com.example.PaymentDeclinedException')).toBe(false);
    expect(isForeignJavaName('PaymentDeclinedException')).toBe(false);
    expect(javaException(' java.net.ConnectException ')?.name).toBe('java.net.ConnectException');
  });
});
