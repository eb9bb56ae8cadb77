import { FallbackPolicy } from './fallback.policy';

/** What `run` throws (the test fails if it returns). */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** Edges of how a thrown value finds its handler, beyond the common Error subclasses. */
describe('FallbackPolicy matching', () => {
  it('matches a thrown function by its class, as any thrown object', () => {
    const policy = new FallbackPolicy('m', [{ errors: [Function], handler: () => 'function handled' }]);
    const thrown = (): void => undefined;

    expect(policy.recover([], thrown)).toBe('function handled');
  });

  it('never matches Object: the walk from the thrown class stops below it', () => {
    const policy = new FallbackPolicy('m', [{ errors: [Object], handler: () => 'object handled' }]);
    const plain = { code: 1 };
    // A prototype without a constructor of its own, directly above Object.prototype.
    const anonymous = Object.create(Object.create(Object.prototype) as object) as object;

    const error = new Error('plain error');

    expect(thrownBy(() => policy.recover([], plain))).toBe(plain);
    expect(thrownBy(() => policy.recover([], anonymous))).toBe(anonymous);
    expect(thrownBy(() => policy.recover([], error))).toBe(error);
  });

  it('rethrows an object whose prototype chain ends without Object.prototype', () => {
    const policy = new FallbackPolicy('m', [{ errors: [Error], handler: () => 'handled' }]);
    // Two prototypes deep, the last one null: the walk must stop at null, not only at Object.prototype.
    const detached = Object.create(Object.create(null) as object) as object;

    expect(thrownBy(() => policy.recover([], detached))).toBe(detached);
  });
});
