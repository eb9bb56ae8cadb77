import { DEFAULT_ORDER, LayerKind, PolicyKind } from '../kernel/resilience.constants';
import { fusedRuns } from './layer-composition';

/** A method's layers innermost first, as the explorer sorts them under `order`. */
function layersOf(kinds: readonly PolicyKind[], order: readonly PolicyKind[]): { kind: PolicyKind }[] {
  return [...kinds].sort((a, b) => order.indexOf(b) - order.indexOf(a)).map((kind) => ({ kind }));
}

/** The runs the engine fuses, as lists of kinds, innermost first. */
function runsOf(kinds: readonly PolicyKind[], order: readonly PolicyKind[]): LayerKind[][] {
  return fusedRuns(layersOf(kinds, order)).map((run) => run.map((layer) => layer.kind));
}

const STANDARD: PolicyKind[] = ['bulkhead', 'timeLimiter', 'rateLimiter', 'circuitBreaker', 'retry', 'fallback'];

describe('fusedRuns', () => {
  const all = [...DEFAULT_ORDER];

  it('runs every standard layer in one engine under the default order, and under a copy of it', () => {
    expect(runsOf(all, DEFAULT_ORDER)).toEqual([STANDARD, ['idempotent']]);
    expect(runsOf(all, [...DEFAULT_ORDER])).toEqual([STANDARD, ['idempotent']]);
    expect(runsOf(['retry', 'timeLimiter'], [...DEFAULT_ORDER])).toEqual([['timeLimiter', 'retry']]);
  });

  it('starts a new engine where a standard layer sits outside the engine order', () => {
    const rateLimiterOutside: PolicyKind[] = [
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'bulkhead',
    ];
    expect(runsOf(all, rateLimiterOutside)).toEqual([
      ['bulkhead', 'timeLimiter', 'circuitBreaker', 'retry'],
      ['rateLimiter', 'fallback'],
      ['idempotent'],
    ]);
    expect(runsOf(['retry', 'rateLimiter'], rateLimiterOutside)).toEqual([['retry'], ['rateLimiter']]);
  });

  it('keeps the layers present in one engine when they keep the engine order, whatever the others do', () => {
    const rateLimiterOutside: PolicyKind[] = [
      'idempotent',
      'fallback',
      'rateLimiter',
      'retry',
      'circuitBreaker',
      'timeLimiter',
      'bulkhead',
    ];
    expect(runsOf(['fallback', 'retry', 'circuitBreaker', 'bulkhead'], rateLimiterOutside)).toEqual([
      ['bulkhead', 'circuitBreaker', 'retry', 'fallback'],
    ]);
  });

  it('splits the engine around a wrapping layer between standard layers', () => {
    const idempotentInside: PolicyKind[] = [
      'fallback',
      'retry',
      'idempotent',
      'circuitBreaker',
      'rateLimiter',
      'timeLimiter',
      'bulkhead',
    ];
    expect(runsOf(all, idempotentInside)).toEqual([
      ['bulkhead', 'timeLimiter', 'rateLimiter', 'circuitBreaker'],
      ['idempotent'],
      ['retry', 'fallback'],
    ]);
    expect(runsOf(['idempotent', 'circuitBreaker', 'bulkhead'], idempotentInside)).toEqual([
      ['bulkhead', 'circuitBreaker'],
      ['idempotent'],
    ]);
  });

  it('puts a wrapping layer innermost when the order says so', () => {
    const idempotentInnermost: PolicyKind[] = [
      'fallback',
      'retry',
      'circuitBreaker',
      'rateLimiter',
      'timeLimiter',
      'bulkhead',
      'idempotent',
    ];
    expect(runsOf(['retry', 'idempotent'], idempotentInnermost)).toEqual([['idempotent'], ['retry']]);
    expect(runsOf(['idempotent'], DEFAULT_ORDER)).toEqual([['idempotent']]);
  });
});
