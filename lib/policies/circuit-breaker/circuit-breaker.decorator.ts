import { addLayer } from '../../decorators/metadata';
import { CircuitBreakerConfigInput } from './circuit-breaker.config';

/**
 * Guards the method with the named circuit breaker: while it is OPEN, calls
 * fail at once with `CallNotPermittedError` and never reach the dependency.
 * Methods naming the same breaker share its state.
 */
export function CircuitBreaker(name: string, overrides?: CircuitBreakerConfigInput): MethodDecorator {
  return (target, key, descriptor) =>
    addLayer(target, key, descriptor, { kind: 'circuitBreaker', name, overrides, decorator: 'CircuitBreaker' });
}
