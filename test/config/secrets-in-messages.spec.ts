import { Pool } from 'pg';
import { fromSpringConfig } from '../../lib';
import { NOT_SHOWN } from '../../lib/config/value-preview';
import { messageOf, registry } from '../support/config-messages';

const SECRET = 'hunter2-Sup3r-s3cret';

describe('messages about options written in code hide credentials as those about a Spring file do', () => {
  const pool = new Pool({ connectionString: `postgres://app:${SECRET}@db.internal:5432/shop` });
  afterAll(() => pool.end());

  it('a client given where a store belongs is named by its class, not listed with its connection string', () => {
    const message = messageOf(() => registry({ rateLimiterStore: pool }));
    expect(message).toContain("key 'rateLimiterStore' must be a rate limiter store");
    expect(message).toContain('got an instance of BoundPool');
    expect(message).not.toContain('postgres://');
  });

  it('the password of a URL given as a value is not shown, in code as in a file', () => {
    const url = `redis://cache:${SECRET}@redis.internal:6379`;
    for (const options of [
      { retry: { instances: { a: { maxAttempts: url } } } },
      fromSpringConfig.bind(undefined, { 'resilience4j.retry.instances.a.max-attempts': url }),
    ]) {
      const message = messageOf(() => (typeof options === 'function' ? options() : registry(options)));
      expect(message).toMatch(/key '(maxAttempts|max-attempts)' must be an integer/);
      expect(message).toContain(`redis://cache:${NOT_SHOWN}@redis.internal:6379`);
      expect(message).not.toContain(SECRET);
    }
  });
});

describe('a warning never shows the text of a placeholder', () => {
  beforeAll(() => {
    // A secret read from a file often ends in a line break.
    process.env.H33_RETRY_EXCEPTIONS = 'org.apache.hunter2.SecretException\n';
  });
  afterAll(() => delete process.env.H33_RETRY_EXCEPTIONS);

  it('names a placeholder whose text the list read with its spaces trimmed', () => {
    const warnings: string[] = [];
    registry(fromSpringConfig({ 'resilience4j.retry.instances.a.retry-exceptions': '${H33_RETRY_EXCEPTIONS}' }), (m) =>
      warnings.push(m),
    );
    expect(warnings.join('\n')).toContain("'retry-exceptions' names '${H33_RETRY_EXCEPTIONS}'");
    expect(warnings.join('\n')).not.toContain('hunter2');
  });

  it('names a placeholder that gave an instance name, in the warning and the error about that instance', () => {
    process.env.H33_RETRY_NAME = 'paymentz';
    try {
      const warnings: string[] = [];
      const r = registry(
        fromSpringConfig({
          'resilience4j.retry.instances.payments.max-attempts': 2,
          'resilience4j.hedging.instances.h.budget': '${H33_RETRY_NAME}',
        }),
        (m) => warnings.push(m),
      );
      const message = messageOf(() => r.hedge('h'));
      expect(warnings.join('\n')).toContain("uses retry instance '${H33_RETRY_NAME}'");
      expect(message).toContain("names retry instance '${H33_RETRY_NAME}'");
      expect([...warnings, message].join('\n')).not.toContain('paymentz');
    } finally {
      delete process.env.H33_RETRY_NAME;
    }
  });
});
