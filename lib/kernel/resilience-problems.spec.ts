import { CallNotPermittedError, ResilienceError } from './errors';
import { resilienceProblem, retryAfterSeconds } from './resilience-problems';

describe('retryAfterSeconds', () => {
  it('rounds up to whole seconds, at least 1, with a default when there is no hint', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterSeconds(60_000)).toBe(60);
    expect(retryAfterSeconds(undefined)).toBe(1);
  });
});

class CustomError extends ResilienceError {
  readonly code = 'CUSTOM';
  constructor() {
    super('custom', 'something custom');
  }
}

describe('resilienceProblem', () => {
  it('answers an unknown ResilienceError subclass with a plain 500', () => {
    const problem = resilienceProblem(new CustomError());
    expect(problem.status).toBe(500);
    expect(problem.headers).toEqual({ 'Content-Type': 'application/problem+json; charset=utf-8' });
    expect(problem.body).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'something custom',
      name: 'custom',
    });
  });

  it('gives a subclass its parent kind answer through the shared code', () => {
    class BreakerOpenForMaintenance extends CallNotPermittedError {}
    const problem = resilienceProblem(new BreakerOpenForMaintenance('payments', 'FORCED_OPEN', 90_000), '/pay');
    expect(problem.status).toBe(503);
    expect(problem.headers['Retry-After']).toBe('90');
    expect(problem.body.instance).toBe('/pay');
  });
});
