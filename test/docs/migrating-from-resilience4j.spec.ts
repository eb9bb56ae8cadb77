import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ORDER, fromSpringConfig, ResilienceRegistry } from '../../lib';
import { JAVA_EXCEPTIONS } from '../../lib/java-exceptions';
import { ASPECT_ORDER_DIFFERS } from '../../lib/config/config.messages';
import { POLICY_SCHEMAS } from '../../lib/resolve-options';
import {
  IGNORED_INSTANCE_PROPERTIES,
  IGNORED_SECTION_PROPERTIES,
  IGNORED_SECTIONS,
  LEGACY_PROPERTIES,
} from '../../lib/config/resilience4j-properties';
import { THREAD_POOL_BULKHEAD_SCHEMA } from '../../lib/bulkhead/thread-pool-bulkhead.config';
import { checkMarkdownSnippets } from '../support/markdown-snippets';

const GUIDE = 'docs/migrating-from-resilience4j.md';
const text = readFileSync(join(__dirname, '..', '..', GUIDE), 'utf8');
const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

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
      ...[IGNORED_INSTANCE_PROPERTIES, IGNORED_SECTION_PROPERTIES, LEGACY_PROPERTIES].flatMap((table) =>
        Object.values(table).flatMap((t) => Object.keys(t)),
      ),
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
    });
  });
});
