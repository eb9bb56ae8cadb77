import { Test } from '@nestjs/testing';
import { INVALID_VALUE } from '../../lib/config/config.messages';
import { ResilienceEndpointsModule, ResilienceModule, ResilienceModuleOptions } from '../../lib';

/** The message bootstrap fails with. */
async function bootstrapError(imports: unknown[]): Promise<string> {
  try {
    const app = await Test.createTestingModule({ imports: imports as never[] }).compile();
    await app.init();
    await app.close();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected bootstrap to fail');
}

const forRoot = (options: unknown) => ResilienceModule.forRoot(options as ResilienceModuleOptions);

describe('every options section reads its settings with the same toolkit', () => {
  it.each([
    ['module options', { strict: 'maybe' }, 'module options', 'strict', 'true or false', 'maybe'],
    ['deadline', { deadline: { default_budget: 0 } }, 'deadline options', 'default_budget', 'a positive duration', 0],
    [
      'retry',
      { retry: { instances: { a: { max_attempts: 0 } } } },
      "retry instance 'a'",
      'max_attempts',
      'an integer >= 1',
      0,
    ],
    [
      'circuitBreaker',
      { circuitBreaker: { configs: { default: { 'failure-rate-threshold': 0 } } } },
      "circuitBreaker config 'default'",
      'failure-rate-threshold',
      'a percentage in (0, 100]',
      0,
    ],
    [
      'idempotency',
      { idempotency: { store_timeout: 'soon' } },
      'idempotency options',
      'store_timeout',
      'a positive duration (ms, or a string such as "30s" or "24h")',
      'soon',
    ],
    ['metrics', { metrics: { ENABLED: 'maybe' } }, 'metrics options', 'ENABLED', 'true or false', 'maybe'],
    [
      'health',
      { health: { fallback_share: { threshold: 0 } } },
      "health options 'fallback_share'",
      'threshold',
      'a percentage in (0, 100]',
      0,
    ],
    [
      'logging',
      { logging: { 'quiet-period': 0 } },
      'logging options',
      'quiet-period',
      'a positive duration (ms number or "250ms", "2s", "1m")',
      0,
    ],
    [
      'loadShedding',
      { loadShedding: { max_concurrent_requests: 0 } },
      'loadShedding options',
      'max_concurrent_requests',
      'a positive whole number',
      0,
    ],
  ])(
    '%s: a bad value in any spelling of its key fails bootstrap naming the section, the key and the value',
    async (_, options, place, key, expected, value) => {
      expect(await bootstrapError([forRoot(options)])).toBe(INVALID_VALUE(place, key, expected, value));
    },
  );

  it('ResilienceEndpointsModule: a bad value names the endpoint, the key and the value when forRoot reads it', () => {
    expect(() => ResilienceEndpointsModule.forRoot({ status: { 'event-buffer-size': 0 } } as never)).toThrow(
      INVALID_VALUE("ResilienceEndpointsModule options 'status'", 'event-buffer-size', 'an integer >= 1', 0),
    );
  });
});
