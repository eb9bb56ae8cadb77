import { DEFAULT_ORDER, PolicyKind } from '../kernel/resilience.constants';
import { fusedDepth } from './layer-composition';

/** A method's layers innermost first, as the explorer sorts them under `order`. */
function layersOf(kinds: readonly PolicyKind[], order: readonly PolicyKind[]): { kind: PolicyKind }[] {
  return [...kinds].sort((a, b) => order.indexOf(b) - order.indexOf(a)).map((kind) => ({ kind }));
}

describe('fusedDepth', () => {
  const all = [...DEFAULT_ORDER];

  it('fuses every standard layer under the default order, and under a copy of it', () => {
    expect(fusedDepth(layersOf(all, DEFAULT_ORDER))).toBe(6);
    expect(fusedDepth(layersOf(all, [...DEFAULT_ORDER]))).toBe(6);
    expect(fusedDepth(layersOf(['retry', 'timeLimiter'], [...DEFAULT_ORDER]))).toBe(2);
  });

  it('fuses nothing when the standard layers nest in another order', () => {
    const rateLimiterOutside: PolicyKind[] = [
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'bulkhead',
    ];
    expect(fusedDepth(layersOf(all, rateLimiterOutside))).toBe(0);
    expect(fusedDepth(layersOf(['retry', 'rateLimiter'], rateLimiterOutside))).toBe(0);
  });

  it('fuses the layers present when they keep the pipeline order, whatever the others do', () => {
    const rateLimiterOutside: PolicyKind[] = [
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'bulkhead',
    ];
    expect(fusedDepth(layersOf(['fallback', 'retry', 'circuitBreaker', 'bulkhead'], rateLimiterOutside))).toBe(4);
  });

  it('fuses nothing when another layer sits between standard layers', () => {
    const idempotentInside: PolicyKind[] = [
      'fallback',
      'retry',
      'idempotent',
      'circuitBreaker',
      'rateLimiter',
      'timeLimiter',
      'bulkhead',
    ];
    expect(fusedDepth(layersOf(all, idempotentInside))).toBe(0);
    expect(fusedDepth(layersOf(['idempotent', 'circuitBreaker', 'bulkhead'], idempotentInside))).toBe(2);
  });

  it('fuses nothing when the innermost layer is not a standard one', () => {
    const idempotentInnermost: PolicyKind[] = [
      'fallback',
      'retry',
      'circuitBreaker',
      'rateLimiter',
      'timeLimiter',
      'bulkhead',
      'idempotent',
    ];
    expect(fusedDepth(layersOf(['retry', 'idempotent'], idempotentInnermost))).toBe(0);
    expect(fusedDepth(layersOf(['idempotent'], DEFAULT_ORDER))).toBe(0);
  });
});
