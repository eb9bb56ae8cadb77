import { INVALID_VALUE } from '../../config/config.messages';
import { RETRY_SCHEMA, RetryConfig } from './retry.config';

const check = (overrides: Partial<RetryConfig>): void =>
  RETRY_SCHEMA.check?.({ ...RETRY_SCHEMA.defaults, ...overrides }, "retry instance 'inventory'");

describe('RETRY_SCHEMA.check', () => {
  it.each(['equal', 'decorrelated'] as const)(
    'refuses %s jitter with enableRandomizedWait, naming the instance, the setting and the value',
    (jitter) => {
      expect(() => check({ enableRandomizedWait: true, jitter })).toThrow(
        new Error(
          INVALID_VALUE("retry instance 'inventory'", 'jitter', "'none' when enableRandomizedWait is true", jitter),
        ),
      );
    },
  );

  it.each(['none', 'full'] as const)('accepts %s jitter with enableRandomizedWait', (jitter) => {
    expect(() => check({ enableRandomizedWait: true, jitter })).not.toThrow();
  });

  it.each(['full', 'equal', 'decorrelated', 'none'] as const)('accepts %s jitter without randomized wait', (jitter) => {
    expect(() => check({ enableRandomizedWait: false, jitter })).not.toThrow();
  });
});
