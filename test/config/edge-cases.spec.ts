import { ResilienceRegistry } from '../../lib';
import { INVALID_VALUE, instancePlace } from '../../lib/config/config.messages';
import { TOO_MANY_UNDECLARED_INSTANCES } from '../../lib/kernel/resilience.messages';

describe('instance names that are also Object.prototype keys', () => {
  // A YAML or JSON file yields such names as plain own keys, as JSON.parse does here.
  const options = JSON.parse(
    '{"circuitBreaker":{"instances":{"__proto__":{"failureRateThreshold":17},"constructor":{"failureRateThreshold":18},"toString":{"failureRateThreshold":19}}},' +
      '"retry":{"configs":{"__proto__":{"maxAttempts":7}},"instances":{"hasOwnProperty":{"baseConfig":"__proto__"}}}}',
  );

  it.each([
    ['__proto__', 17],
    ['constructor', 18],
    ['toString', 19],
  ])('keep the settings of an instance named %s', (name, threshold) => {
    const registry = new ResilienceRegistry(options);
    expect(registry.circuitBreaker(name).config.failureRateThreshold).toBe(threshold);
  });

  it('keep a config named __proto__ usable as a baseConfig', () => {
    expect(new ResilienceRegistry(options).retry('hasOwnProperty').config.maxAttempts).toBe(7);
  });

  it('give an undeclared instance named toString the default config, not a function', () => {
    expect(new ResilienceRegistry({}).circuitBreaker('toString').config.failureRateThreshold).toBe(50);
  });
});

describe('integers too large to allocate', () => {
  it('refuse slidingWindowSize: 2**53 with a message naming the instance and the key', () => {
    const build = () =>
      new ResilienceRegistry({ circuitBreaker: { instances: { psp: { slidingWindowSize: 2 ** 53 } } } });
    expect(build).toThrow(
      INVALID_VALUE(
        instancePlace('circuitBreaker', 'instance', 'psp'),
        'slidingWindowSize',
        'an integer between 1 and 1000000',
        2 ** 53,
      ),
    );
  });

  it('refuse an integer beyond Number.MAX_SAFE_INTEGER anywhere, naming the key', () => {
    const build = () => new ResilienceRegistry({ retry: { instances: { inventory: { maxAttempts: 2 ** 60 } } } });
    expect(build).toThrow(/retry instance 'inventory': key 'maxAttempts' must be an integer >= 1/);
  });
});

describe('instances created from request data', () => {
  it('are capped at maxUndeclaredInstances per policy: an idle name makes room, and none is refused with a message naming the option', () => {
    const registry = new ResilienceRegistry({
      maxUndeclaredInstances: 3,
      circuitBreaker: { instances: { declared: {} } },
    });
    for (const tenant of ['t1', 't2', 't3']) registry.circuitBreaker(`tenant-${tenant}`);
    registry.circuitBreaker('declared');
    registry.circuitBreaker('tenant-t1');
    // t2 is the least recently used idle name: t4 takes its place.
    registry.circuitBreaker('tenant-t4');
    expect(
      registry
        .all('circuitBreaker')
        .map((b) => b.name)
        .sort(),
    ).toEqual(['declared', 'tenant-t1', 'tenant-t3', 'tenant-t4']);
    // Breakers held open keep their state: with every undeclared name open, a fourth is refused.
    for (const name of ['tenant-t1', 'tenant-t3', 'tenant-t4'])
      registry.circuitBreaker(name).transitionToForcedOpenState();
    expect(() => registry.circuitBreaker('tenant-t5')).toThrow(
      TOO_MANY_UNDECLARED_INSTANCES('circuitBreaker', 'tenant-t5', 3),
    );
    expect(registry.retry('another-policy').config.maxAttempts).toBe(3);
  });

  it('are capped at 100 per policy by default: 200 names taken from requests never hold more than 100 instances', () => {
    const registry = new ResilienceRegistry({});
    for (let i = 0; i < 200; i++) registry.circuitBreaker(`customer-${i}`);
    const kept = registry.all('circuitBreaker').map((b) => b.name);
    expect(kept).toHaveLength(100);
    // The most recent names are kept; the least recently used were evicted.
    expect(kept).toContain('customer-199');
    expect(kept).not.toContain('customer-0');
  });

  it('refuse a maxUndeclaredInstances that is not a positive integer', () => {
    expect(() => new ResilienceRegistry({ maxUndeclaredInstances: 0 })).toThrow(
      INVALID_VALUE('module options', 'maxUndeclaredInstances', 'an integer >= 1', 0),
    );
  });
});
