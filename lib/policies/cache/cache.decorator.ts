import { addLayer } from '../../decorators/metadata';
import { CacheConfigInput } from './cache.config';

/**
 * Caches the method's answers with the named cache instance (section
 * `cache`; created from `configs.default` when not declared, or a private
 * instance of the method when no name is given), right outside the retry
 * and inside the fallback. An answer younger than `ttl` is served without
 * calling; when the call fails, the last known good younger than
 * `staleIfError` answers, through `mark`; with `coalesce`, concurrent calls
 * with one key share one call. A cold start or an answer past its shelf
 * life is never invented: the call fails with its own error. Errors and
 * refusals are never cached. An Observable method's last value is its answer.
 *
 * @example
 * ```ts
 * @Cache('rates')   // cache.instances.rates: { staleIfError: '6h', mark: (r, { asOf }) => ({ ...r, fresh: false, asOf }) }
 * @Retry('rates')
 * async rate(currency: string): Promise<Rate> { ... }
 * ```
 */
export function Cache(name?: string, overrides?: CacheConfigInput): MethodDecorator {
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'cache', name, overrides, decorator: 'Cache' });
}
