import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ORDER, fromSpringConfig, ResilienceRegistry } from '../../lib';
import { JAVA_EXCEPTIONS } from '../../lib/spring/exceptions/java-exceptions';
import { ASPECT_ORDER_DIFFERS } from '../../lib/config/config.messages';
import { POLICY_SCHEMAS } from '../../lib/registry/resolve-options';
import {
  IGNORED_INSTANCE_PROPERTIES,
  IGNORED_SECTION_PROPERTIES,
  IGNORED_SECTIONS,
  LEGACY_PROPERTIES,
  SPRING_IGNORED_PROPERTIES,
} from '../../lib/config/resilience4j-properties';
import { RESILIENCE4J_DEFAULTS } from '../../lib/config/resilience4j-defaults';
import { THREAD_POOL_BULKHEAD_SCHEMA } from '../../lib/policies/bulkhead/thread-pool-bulkhead.config';
import { checkMarkdownSnippets } from '../support/markdown-snippets';

const GUIDE = 'docs/migrating-from-resilience4j.md';
const text = readFileSync(join(__dirname, '..', '..', GUIDE), 'utf8');
const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The cells of the rows of the table whose header line is `header`. */
function tableRows(header: string): string[][] {
  const start = text.indexOf(header);
  if (start < 0) throw new Error(`${GUIDE} has no table '${header}'`);
  const lines = text.slice(start).split('\n').slice(2);
  const end = lines.findIndex((line) => !line.startsWith('|'));
  return lines.slice(0, end < 0 ? undefined : end).map((line) =>
    line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim()),
  );
}

describe('docs/migrating-from-resilience4j.md', () => {
  it('has TypeScript snippets that compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets(GUIDE);
    expect(blocks).toBeGreaterThanOrEqual(3);
    expect(diagnostics).toEqual([]);
  });

  it('lists every property the configuration knows, supported, warned or 0.x', () => {
    const keys = [
      ...Object.values(POLICY_SCHEMAS).flatMap((schema) => Object.keys(schema.fields)),
      ...Object.keys(THREAD_POOL_BULKHEAD_SCHEMA.fields),
      ...[
        IGNORED_INSTANCE_PROPERTIES,
        IGNORED_SECTION_PROPERTIES,
        LEGACY_PROPERTIES,
        SPRING_IGNORED_PROPERTIES,
      ].flatMap((table) => Object.values(table).flatMap((t) => Object.keys(t))),
      ...Object.keys(IGNORED_SECTIONS),
    ];
    const missing = [...new Set(keys.map(kebab))].filter((key) => !text.includes(`\`${key}`));
    expect(missing).toEqual([]);
  });

  it('has every Java exception name of the table (the status subclasses as a family)', () => {
    const missing = JAVA_EXCEPTIONS.map((e) => e.name)
      .filter((name) => !/\$(?!Feign)/.test(name))
      .filter((name) => !text.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('has the Java names table of the code: one row per meaning, with every name that has it', () => {
    const expected = new Map<string, string[]>();
    for (const entry of JAVA_EXCEPTIONS) {
      if (/\$(?!Feign)/.test(entry.name)) continue;
      expected.set(entry.meaning, [...(expected.get(entry.meaning) ?? []), entry.name]);
    }
    const rows = new Map<string, string[]>();
    for (const [names, meaning] of tableRows('| Java name | matches in Node |')) {
      const listed = [...names.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      if (listed.some((n) => n.startsWith('…'))) continue;
      rows.set(meaning, listed);
    }
    expect(rows).toEqual(expected);
  });

  it("lists what fromSpringConfig turns off: each of Resilience4j's defaults a Spring file gets, with the native one", () => {
    const SECTION: Record<string, string> = { circuitBreaker: 'circuitbreaker', retry: 'retry', bulkhead: 'bulkhead' };
    const shown = (value: unknown): string =>
      value === Number.POSITIVE_INFINITY
        ? 'unbounded'
        : value === undefined
          ? '`max-concurrent-calls`'
          : `\`${JSON.stringify(value).replace(/"/g, '')}\``;
    const expected = Object.entries(RESILIENCE4J_DEFAULTS).flatMap(([policy, keys]) =>
      Object.entries(keys).map(([key, value]) => [
        `${SECTION[policy]} \`${kebab(key)}\``,
        shown(
          (POLICY_SCHEMAS[policy as keyof typeof POLICY_SCHEMAS].defaults as unknown as Record<string, unknown>)[key],
        ),
        shown(value),
      ]),
    );
    const rows = tableRows('| setting | native default | from a Spring file | why the native default differs |').map(
      (cells) => cells.slice(0, 3),
    );
    expect(rows).toEqual(expected);
  });

  it('worked example: its application.yml starts with the three warnings it promises, and the order it names is the one the TypeScript sets', () => {
    const yaml = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(yaml).toHaveLength(1);
    const warnings: string[] = [];
    const registry = new ResilienceRegistry(fromSpringConfig(yaml[0]), (m) => warnings.push(m));
    const order = [
      'idempotent',
      'fallback',
      'circuitBreaker',
      'retry',
      'rateLimiter',
      'timeLimiter',
      'bulkhead',
    ] as const;
    expect(warnings.filter((w) => /aspect-order' is ignored/.test(w))).toHaveLength(2);
    expect(warnings[2]).toBe(ASPECT_ORDER_DIFFERS(order, DEFAULT_ORDER));
    expect(text).toContain(`order: [${order.map((k) => `'${k}'`).join(', ')}]`);
    expect(registry.circuitBreaker('payments').config).toMatchObject({
      slidingWindowType: 'COUNT_BASED',
      slidingWindowSize: 20,
      waitDurationInOpenState: 30_000,
    });
    expect(registry.timeLimiter('payments').config.timeoutDuration).toBe(2000);
    expect(registry.retry('payments').config).toMatchObject({
      maxAttempts: 3,
      waitDuration: 200,
      exponentialBackoffMultiplier: 2,
      jitter: 'none',
      exceptionRules: 'resilience4j',
    });
  });
});
