import { parse as parseYaml } from 'yaml';
import { fromSpringConfig } from '../../lib';
import { MAX_DOCUMENT_DEPTH, MAX_DOCUMENT_ENTRIES, MAX_DOCUMENT_LENGTH } from '../../lib/config/document-limits';
import {
  DOCUMENT_TOO_DEEP,
  DOCUMENT_TOO_LARGE,
  NAME_STRIPPED,
  PLACEHOLDER_CYCLE,
  PLACEHOLDER_TOO_DEEP,
  UNCLOSED_PLACEHOLDER,
  UNRESOLVED_PLACEHOLDER,
} from '../../lib/config/config.messages';
import { messageOf, registry } from '../support/config-messages';

const SECRET = 'hunter2-Sup3r-s3cret';

describe('fromSpringConfig never echoes a value that came from a placeholder', () => {
  beforeAll(() => {
    process.env.DB_PASSWORD = SECRET;
    // Only names that look like Java classes get the exception-list warning.
    process.env.RETRY_EXCEPTIONS = 'org.apache.hunter2.SecretException,java.io.IOException';
  });
  afterAll(() => {
    delete process.env.DB_PASSWORD;
    delete process.env.RETRY_EXCEPTIONS;
  });

  it.each([
    ['a percentage', 'circuitbreaker.instances.a.failure-rate-threshold', '${DB_PASSWORD}'],
    ['a duration', 'circuitbreaker.instances.a.wait-duration-in-open-state', '${DB_PASSWORD}'],
    ['an integer', 'retry.instances.a.max-attempts', '${DB_PASSWORD}'],
    ['an enum', 'circuitbreaker.instances.a.sliding-window-type', '${DB_PASSWORD}'],
    ['a boolean', 'circuitbreaker.instances.a.automatic-transition-from-open-to-half-open-enabled', '${DB_PASSWORD}'],
    ['a base config', 'retry.instances.a.base-config', '${DB_PASSWORD}'],
    ['text around it', 'bulkhead.instances.a.max-wait-duration', 'x-${DB_PASSWORD}-y'],
    ['a default', 'bulkhead.instances.a.max-concurrent-calls', '${NO_SUCH_VARIABLE_HERE:${DB_PASSWORD}}'],
  ])('in the error for %s: the placeholder is shown, never its text', (_, key, written) => {
    const message = messageOf(() => fromSpringConfig({ [`resilience4j.${key}`]: written }));
    expect(message).not.toContain('hunter2');
    expect(message).toContain(written);
    expect(message).toContain(key.split('.').pop());
  });

  it('in the warning for an exception list that matches nothing, given when forRoot uses the options', () => {
    const options = fromSpringConfig({ 'resilience4j.retry.instances.a.retry-exceptions': '${RETRY_EXCEPTIONS}' });
    const warnings: string[] = [];
    registry(options, (m) => warnings.push(m));
    expect(warnings.join('\n')).toContain("'retry-exceptions' names '${RETRY_EXCEPTIONS}'");
    expect(warnings.join('\n')).not.toContain('hunter2');
  });

  it('in the error that quotes a whole map of settings', () => {
    const message = messageOf(() =>
      fromSpringConfig({
        'resilience4j.retry.backends.a.max-attempts': 2,
        'resilience4j.retry.instances.a.max-attempts': '${DB_PASSWORD}',
      }),
    );
    expect(message).toMatch(/retry instance 'a'/);
    expect(message).not.toContain('hunter2');
  });
});

describe('fromSpringConfig never echoes the value of a key that names a credential', () => {
  it.each(['password', 'db-password', 'apiToken', 'client_secret', 'api-key', 'credentials'])(
    'a settings map holding %s is quoted without its value',
    (key) => {
      const message = messageOf(() =>
        fromSpringConfig({
          'resilience4j.retry.backends.a.max-attempts': 2,
          'resilience4j.retry.instances.a': { [key]: 'pw-value-0123' },
        }),
      );
      expect(message).toMatch(/retry instance 'a'/);
      expect(message).not.toContain('pw-value-0123');
    },
  );

  it('a list of settings maps in place of one is quoted without the credential either', () => {
    const message = messageOf(() =>
      fromSpringConfig({ 'resilience4j.retry.instances.a': [{ token: 'tok-value-0123', 'max-attempts': 2 }] }),
    );
    expect(message).toMatch(/retry instance 'a'/);
    expect(message).toContain('max-attempts');
    expect(message).not.toContain('tok-value-0123');
  });
});

describe('fromSpringConfig resolves only real variables and properties', () => {
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'])(
    '${%s} is not a property of process.env: unresolved without a default, the default with one',
    (name) => {
      const key = 'resilience4j.retry.instances.a.wait-duration';
      expect(messageOf(() => fromSpringConfig({ [key]: `\${${name}}` }))).toBe(
        UNRESOLVED_PLACEHOLDER(key, `\${${name}}`),
      );
      expect(registry(fromSpringConfig({ [key]: `\${${name}:750ms}` })).retry('a').config.waitDuration).toBe(750);
    },
  );

  it('resolves a property that itself holds a placeholder, as Spring does', () => {
    const options = fromSpringConfig({
      'resilience4j.retry.instances.a.max-attempts': '${app.retries}',
      app: { retries: '${app.base-retries}', 'base-retries': 4 },
    });
    expect(registry(options).retry('a').config.maxAttempts).toBe(4);
  });

  it('refuses a cycle of placeholders, naming each property on it', () => {
    const key = 'resilience4j.retry.instances.a.max-attempts';
    expect(messageOf(() => fromSpringConfig({ [key]: '${a}', a: '${b}', b: '${a}' }))).toBe(
      PLACEHOLDER_CYCLE(key, ['a', 'b', 'a']),
    );
    expect(messageOf(() => fromSpringConfig({ [key]: `\${${key}}` }))).toBe(PLACEHOLDER_CYCLE(key, [key, key]));
  });

  it('refuses an unclosed placeholder, naming the key', () => {
    const key = 'resilience4j.retry.instances.a.max-attempts';
    expect(messageOf(() => fromSpringConfig({ [key]: '${RETRIES:3' }))).toBe(UNCLOSED_PLACEHOLDER(key));
  });
});

/** CPU milliseconds `run` takes (other processes' load does not count); a refusal is an answer too. */
function timeOf(run: () => unknown): number {
  const start = process.cpuUsage();
  try {
    run();
  } catch {
    // refused: timed all the same
  }
  const spent = process.cpuUsage(start);
  return (spent.user + spent.system) / 1000;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * How many times longer `fromSpringConfig` takes on the document of `size`
 * than on the one of `size / 4`: about 4 when linear, 16 when quadratic.
 * Medians of 5 runs, interleaved, so the load of the machine cancels out.
 */
function growth(document: (size: number) => object, size = 400_000): number {
  const small = document(size / 16);
  const large = document(size);
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < 5; i++) {
    times[0].push(timeOf(() => fromSpringConfig(small)));
    times[1].push(timeOf(() => fromSpringConfig(large)));
  }
  return median(times[1]) / Math.max(median(times[0]), 1);
}

describe('fromSpringConfig runs in time linear in its input', () => {
  const key = 'resilience4j.retry.instances.a.max-attempts';
  // Each shape cost time quadratic in its length before: 80 kB of '${a' took 4.5 s, 200 kB 26 s.
  // Here, 16 times the input costs about 16 times the time (quadratic would be 256 times); the bound, 64, sits
  // between the two so that a busy machine's noise cannot fail it and quadratic work cannot pass it.
  it.each([
    ['unclosed placeholders', '${a'],
    ['placeholders with defaults', '${NO_SUCH_VARIABLE_HERE:1}'],
    ['nested defaults', '${A:'],
    ['braces without placeholders', '}{$'],
  ])('reading 400 kB of %s costs far less than 256 times reading 25 kB', (_, unit) => {
    expect(growth((size) => ({ [key]: unit.repeat(Math.ceil(size / unit.length)) }))).toBeLessThan(64);
  });

  it('so does reading 200 kB of placeholders referring to other properties', () => {
    const document = (size: number): object => {
      const count = size / 10;
      const out: Record<string, unknown> = { [key]: Array.from({ length: count }, (_, i) => `\${p${i}}`).join('') };
      // Chains of 50 properties, each holding a placeholder of the next.
      for (let i = 0; i < count; i++) out[`p${i}`] = i % 50 === 49 ? '3' : `\${p${i + 1}}`;
      return out;
    };
    expect(growth(document, 200_000)).toBeLessThan(64);
    expect(registry(fromSpringConfig({ ...document(1000), [key]: '${p0}' })).retry('a').config.maxAttempts).toBe(3);
  });

  it('refuses properties referring to each other more than 64 deep, naming the key', () => {
    const document: Record<string, unknown> = { [key]: '${p0}' };
    for (let i = 0; i < 1_000; i++) document[`p${i}`] = `\${p${i + 1}}`;
    expect(messageOf(() => fromSpringConfig(document))).toBe(PLACEHOLDER_TOO_DEEP(key, MAX_DOCUMENT_DEPTH));
  });

  it('so does warning about an unknown key of 400 kB', () => {
    expect(growth((size) => ({ [`resilience4j.retry.instances.a.${'x'.repeat(size)}`]: 1 }))).toBeLessThan(64);
  });
});

describe('fromSpringConfig refuses a document beyond its size cap or nesting limit', () => {
  it(`refuses text longer than ${MAX_DOCUMENT_LENGTH} characters, naming both sizes`, () => {
    const text = `resilience4j.retry.instances.a.max-attempts: 3\n#${'x'.repeat(MAX_DOCUMENT_LENGTH)}`;
    expect(messageOf(() => fromSpringConfig(text))).toBe(
      DOCUMENT_TOO_LARGE('fromSpringConfig', `${text.length} characters`, MAX_DOCUMENT_LENGTH, MAX_DOCUMENT_ENTRIES),
    );
  });

  it(`refuses an object with more than ${MAX_DOCUMENT_ENTRIES} keys and list items`, () => {
    const filler: Record<string, number> = {};
    for (let i = 0; i <= MAX_DOCUMENT_ENTRIES; i++) filler[`k${i}`] = i;
    expect(messageOf(() => fromSpringConfig({ resilience4j: {}, filler }))).toBe(
      DOCUMENT_TOO_LARGE(
        'fromSpringConfig',
        `more than ${MAX_DOCUMENT_ENTRIES} keys and list items`,
        MAX_DOCUMENT_LENGTH,
        MAX_DOCUMENT_ENTRIES,
      ),
    );
  });

  it(`refuses an object with more than ${MAX_DOCUMENT_LENGTH} characters of keys and text`, () => {
    expect(messageOf(() => fromSpringConfig({ resilience4j: {}, big: 'x'.repeat(MAX_DOCUMENT_LENGTH) }))).toBe(
      DOCUMENT_TOO_LARGE(
        'fromSpringConfig',
        `more than ${MAX_DOCUMENT_LENGTH} characters of keys and text`,
        MAX_DOCUMENT_LENGTH,
        MAX_DOCUMENT_ENTRIES,
      ),
    );
  });

  it('refuses maps nested 100,000 deep with an error naming the limit and where, not a stack overflow', () => {
    const root: Record<string, unknown> = {};
    let node = root;
    for (let i = 0; i < 100_000; i++) node = node.x = {};
    const message = messageOf(() => fromSpringConfig({ resilience4j: { retry: root } }));
    expect(message).toBe(
      DOCUMENT_TOO_DEEP(
        'fromSpringConfig',
        `resilience4j.retry${'.x'.repeat(MAX_DOCUMENT_DEPTH - 2)}`,
        MAX_DOCUMENT_DEPTH,
      ),
    );
  });

  it('refuses lists nested 100,000 deep', () => {
    let list: unknown[] = [];
    for (let i = 0; i < 100_000; i++) list = [list];
    expect(messageOf(() => fromSpringConfig({ resilience4j: { retry: list } }))).toMatch(/nested more than 64 deep/);
  });

  it('refuses a dotted key of 100,000 segments', () => {
    const message = messageOf(() => fromSpringConfig({ [`resilience4j.${'a.'.repeat(100_000)}b`]: 1 }));
    expect(message).toMatch(/nested more than 64 deep/);
  });

  it('refuses YAML text nested 10,000 deep', () => {
    const text = `resilience4j.retry: ${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    expect(messageOf(() => fromSpringConfig(text))).toMatch(/nested more than 64 deep/);
  });

  it('refuses an object that contains itself', () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(messageOf(() => fromSpringConfig({ resilience4j: { retry: loop } }))).toMatch(
      /'resilience4j\.retry\.self' contains itself/,
    );
  });

  it(`reads a document nested ${MAX_DOCUMENT_DEPTH} deep, and refuses one a level deeper`, () => {
    const nested = (levels: number): Record<string, unknown> => {
      let node: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < levels; i++) node = { [`n${i}`]: node };
      return node;
    };
    const retry = { instances: { a: { 'max-attempts': 2 } } };
    // app, the nested maps and leaf: MAX_DOCUMENT_DEPTH keys in all.
    expect(() => fromSpringConfig({ resilience4j: { retry }, app: nested(MAX_DOCUMENT_DEPTH - 2) })).not.toThrow();
    expect(() => fromSpringConfig({ resilience4j: { retry }, app: nested(MAX_DOCUMENT_DEPTH - 1) })).toThrow(
      /nested more than 64 deep/,
    );
  });
});

describe('forRoot applies the same limits to its options', () => {
  it('refuses options nested 100,000 deep with an error naming where, not a stack overflow', () => {
    const root: Record<string, unknown> = {};
    let node = root;
    for (let i = 0; i < 100_000; i++) node = node.x = {};
    expect(messageOf(() => registry({ retry: { instances: { a: root } } }))).toBe(
      DOCUMENT_TOO_DEEP(
        'module options',
        `retry.instances.a${'.x'.repeat(MAX_DOCUMENT_DEPTH - 3)}`,
        MAX_DOCUMENT_DEPTH,
      ),
    );
  });

  it('reads options whose maps are shared by YAML aliases (as @nestjs/config loads them) once each', () => {
    const document = parseYaml(ALIAS_BOMB, { maxAliasCount: -1 }) as Record<string, unknown>;
    const warnings: string[] = [];
    const r = registry(
      { unknownKeys: 'warn', retry: { instances: { a: { maxAttempts: 2 } } }, bomb: document.i },
      (m) => warnings.push(m),
    );
    expect(r.retry('a').config.maxAttempts).toBe(2);
    expect(warnings).toEqual([expect.stringMatching(/unknown section 'bomb' is ignored/)]);
  });
});

/** A YAML alias bomb: 9 levels of 9 aliases each, 387 million strings when expanded. */
const ALIAS_BOMB = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ...'bcdefghi'.split('').map((name, i) => `${name}: &${name} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(',')}]`),
].join('\n');

// Before, each of these expanded the 387 million strings and ran out of time (Jest's 30 s) or memory.
describe('fromSpringConfig reads an object with shared references in time linear in its distinct parts', () => {
  const bomb = () => parseYaml(ALIAS_BOMB, { maxAliasCount: -1 }) as Record<string, unknown>;

  it('reads a document beside an alias bomb', () => {
    const document = { ...bomb(), 'resilience4j.retry.instances.a.max-attempts': 2 };
    expect(registry(fromSpringConfig(document)).retry('a').config.maxAttempts).toBe(2);
  });

  it('refuses an alias bomb given as a setting, with a short message, quickly', () => {
    const document = { 'resilience4j.retry.instances.a.retry-exceptions': bomb().i };
    const message = messageOf(() => fromSpringConfig(document));
    expect(message).toMatch(/key 'retry-exceptions' must be a list of error classes or class names, got \[\[\[/);
    expect(message.length).toBeLessThan(400);
  });

  it('reads an alias bomb of settings maps', () => {
    const text = [
      'settings: &s { max-attempts: 5 }',
      ...'abcdefgh'.split('').map(
        (name, i) =>
          `${name}: &${name} {${'123456789'
            .split('')
            .map((n) => `${n}: *${i === 0 ? 's' : 'abcdefgh'[i - 1]}`)
            .join(', ')}}`,
      ),
      'resilience4j.retry.instances: *h',
    ].join('\n');
    const document = parseYaml(text, { maxAliasCount: -1 }) as object;
    const warnings: string[] = [];
    registry(fromSpringConfig(document), (m) => warnings.push(m));
    // 9 instances of 9 unknown keys each, every one warned about once.
    expect(warnings).toHaveLength(81);
  });

  it('gives instances that share one map of settings each those settings', () => {
    const document = parseYaml(
      [
        'shared: &s { max-attempts: 5 }',
        'resilience4j.retry.instances:',
        '  a: *s',
        '  b: *s',
        '  b.wait-duration: 2s',
      ].join('\n'),
    ) as object;
    const r = registry(fromSpringConfig(document));
    expect(r.retry('a').config).toMatchObject({ maxAttempts: 5, waitDuration: 500 });
    expect(r.retry('b').config).toMatchObject({ maxAttempts: 5, waitDuration: 2000 });
  });
});

describe('an instance named __proto__', () => {
  const forms: [string, (name: string) => string | object][] = [
    [
      'YAML text',
      (name) =>
        `resilience4j:\n  circuitbreaker:\n    instances:\n      "${name}":\n        failure-rate-threshold: 17\n`,
    ],
    ['.properties text', (name) => `resilience4j.circuitbreaker.instances.${name}.failure-rate-threshold=17\n`],
    [
      'YAML text of two documents',
      (name) => `a: 1\n---\nresilience4j.circuitbreaker.instances.${name}.failure-rate-threshold: 17\n`,
    ],
    [
      'a parsed object with a placeholder',
      (name) =>
        JSON.parse(
          `{"resilience4j":{"circuitbreaker":{"instances":{"${name}":{"failure-rate-threshold":"\${T:17}"}}}}}`,
        ) as object,
    ],
  ];

  it.each(forms)('works through fromSpringConfig(%s), written in brackets', (_, document) => {
    expect(
      registry(fromSpringConfig(document('[__proto__]'))).circuitBreaker('__proto__').config.failureRateThreshold,
    ).toBe(17);
  });

  it.each(forms)(
    "binds as 'proto' through fromSpringConfig(%s) without brackets, with Spring's warning, never refused",
    (_, document) => {
      const warnings: string[] = [];
      const r = registry(fromSpringConfig(document('__proto__')), (m) => warnings.push(m));
      expect(r.circuitBreaker('proto').config.failureRateThreshold).toBe(17);
      expect(warnings).toContain(NAME_STRIPPED('circuitBreaker.instances', '__proto__', 'proto'));
    },
  );
});
