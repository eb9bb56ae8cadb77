import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { RateLimiterConfigInput } from './rate-limiter.config';

/**
 * Admits calls of the method at the named rate limiter's rate
 * (`limitForPeriod` per `limitRefreshPeriod`); a caller waits up to
 * `timeoutDuration` (and never past the request deadline) for a permit,
 * else gets `RateLimitedError` (HTTP 429 + `Retry-After` through
 * `ResilienceExceptionFilter`).
 *
 * @example
 * ```ts
 * @RateLimiter('partnerApi')                          // rateLimiter.instances.partnerApi
 * @RateLimiter('partnerApi', { timeoutDuration: 0 })  // this method refuses at once instead of waiting
 * ```
 *
 * With `key`, each key of the method's arguments gets a limiter of its own (a limit per tenant).
 */
export function RateLimiter(name: string, options?: RateLimiterConfigInput & KeyOption): MethodDecorator {
  const { key: keyOf, overrides } = splitKey(options);
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'rateLimiter', name, overrides, key: keyOf, decorator: 'RateLimiter' });
}
