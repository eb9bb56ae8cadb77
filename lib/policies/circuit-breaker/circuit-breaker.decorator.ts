import { addLayer, KeyOption, splitKey } from '../../decorators/metadata';
import { CircuitBreakerConfigInput } from './circuit-breaker.config';

/**
 * Guards the method with the named circuit breaker: while it is OPEN, calls
 * fail at once with `CallNotPermittedError` and never reach the dependency.
 * Methods naming the same breaker share its state. With `key`, each key
 * of the method's arguments gets a breaker of its own (one per host).
 *
 * @example
 * ```ts
 * @CircuitBreaker('payments', { key: (host: string) => host })
 * async charge(host: string, cents: number) { ... }
 * ```
 */
export function CircuitBreaker(name: string, options?: CircuitBreakerConfigInput & KeyOption): MethodDecorator {
  const { key: keyOf, overrides } = splitKey(options);
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, {
      kind: 'circuitBreaker',
      name,
      overrides,
      key: keyOf,
      decorator: 'CircuitBreaker',
    });
}
