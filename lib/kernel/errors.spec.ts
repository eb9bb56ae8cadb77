import { inspect } from 'node:util';
import {
  BulkheadFullError,
  CallNotPermittedError,
  DeadlineExceededError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReuseError,
  MaxRetriesExceededError,
  OverloadedError,
  RateLimitedError,
  ResilienceError,
  TimeoutExceededError,
} from './errors';

class CustomRefusal extends ResilienceError {
  readonly code = 'CUSTOM';
}

describe('ResilienceError names', () => {
  const errors: ResilienceError[] = [
    new CallNotPermittedError('payments', 'OPEN', 1000),
    new BulkheadFullError('payments', 'wait-timeout', 50),
    new TimeoutExceededError('payments', 2000),
    new DeadlineExceededError('payments'),
    new RateLimitedError('payments', 100),
    new MaxRetriesExceededError('payments', 3, 'PENDING'),
    new IdempotencyKeyMissingError('payments', 'no key'),
    new IdempotencyKeyInProgressError('payments', 100),
    new IdempotencyKeyReuseError('payments'),
    new CustomRefusal('payments', 'refused'),
  ];

  it.each(errors.map((e) => [e.constructor.name, e] as const))(
    '%s: name is the class name, instance is the policy instance',
    (className, error) => {
      expect(error.name).toBe(className);
      expect(error.instance).toBe('payments');
      expect(String(error)).toBe(`${className}: ${error.message}`);
      expect(error.stack?.startsWith(`${className}: `)).toBe(true);
      expect(inspect(error)).toContain(className);
    },
  );

  it('OverloadedError: name is the class name, instance is the load shedder', () => {
    const error = new OverloadedError('concurrency', 'normal', 1000);
    expect(error.name).toBe('OverloadedError');
    expect(error.instance).toBe('loadShedding');
  });

  it('lets code relabel one error without changing the others', () => {
    const relabelled = new TimeoutExceededError('a', 1);
    relabelled.name = 'Relabelled';
    expect(relabelled.name).toBe('Relabelled');
    expect(new TimeoutExceededError('b', 1).name).toBe('TimeoutExceededError');
  });
});
