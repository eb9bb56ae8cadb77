import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { Registry } from 'prom-client';
import request from 'supertest';
import { ResilienceEndpointsModule } from '../../lib';
import { bootApp, driveTraffic, parseScrape, Sample } from './kit';

const DASHBOARD = join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json');

/** Every PromQL expression of the dashboard: panel targets and template variable queries. */
function expressions(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) expressions(item, found);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'expr' || key === 'definition') && typeof value === 'string') found.push(value);
      else expressions(value, found);
    }
  }
  return found;
}

/** Labels Prometheus adds to every scraped series, not the application. */
const TARGET_LABELS = new Set(['instance', 'job']);

describe('docs/grafana-dashboard.json against a scrape', () => {
  let app: INestApplication;
  let samples: Sample[];
  const exprs = expressions(JSON.parse(readFileSync(DASHBOARD, 'utf8')));

  beforeAll(async () => {
    const booted = await bootApp(
      { metrics: { registry: new Registry() }, loadShedding: { adaptive: {}, eventLoopDelay: { threshold: '1s' } } },
      { imports: [ResilienceEndpointsModule.forRoot({ metrics: true })] },
    );
    app = booted.app;
    await driveTraffic(booted.clock, booted.shop);
    samples = parseScrape((await request(app.getHttpServer()).get('/metrics').expect(200)).text);
  });

  afterAll(() => app.close());

  it('has the incident panels', () => {
    const titles = (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string }> }).panels.map(
      (p) => p.title,
    );
    expect(titles).toEqual(
      expect.arrayContaining([
        'Breaker state',
        'Failure rate',
        'Slow-call rate',
        'Retries by kind',
        'Retry budget denials',
        'Bulkhead saturation',
        'Fallback share by method',
        'Cache answers by result',
        'Load shed by reason and class',
        'Concurrency limit and in flight',
        'Event-loop delay',
      ]),
    );
  });

  it('uses only metric names present in the scrape', () => {
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\bresilience4(?:j|nest)_[a-z_]+\b/g)].map((m) => m[0])));
    const scraped = new Set(samples.map((s) => s.name));
    expect(used.size).toBeGreaterThanOrEqual(21);
    expect([...used].filter((name) => !scraped.has(name))).toEqual([]);
  });

  it('selects only labels those series carry, and exact label values the scrape has', () => {
    const problems: string[] = [];
    for (const expr of exprs) {
      for (const [, metric, matchers] of expr.matchAll(/\b(resilience4(?:j|nest)_[a-z_]+)\{([^}]*)\}/g)) {
        const series = samples.filter((s) => s.name === metric);
        for (const [, label, op, value] of matchers.matchAll(/(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"/g)) {
          if (TARGET_LABELS.has(label)) continue;
          if (!series.some((s) => label in s.labels)) problems.push(`${metric} has no label '${label}'`);
          else if (op === '=' && !series.some((s) => s.labels[label] === value))
            problems.push(`${metric}{${label}="${value}"} is never exported`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('has balanced brackets in every expression', () => {
    for (const expr of exprs) {
      const depth = { '(': 0, '{': 0, '[': 0 };
      for (const c of expr.replace(/"[^"]*"/g, '')) {
        if (c === '(' || c === '{' || c === '[') depth[c]++;
        else if (c === ')') depth['(']--;
        else if (c === '}') depth['{']--;
        else if (c === ']') depth['[']--;
        expect(Math.min(...Object.values(depth))).toBeGreaterThanOrEqual(0);
      }
      expect(depth).toEqual({ '(': 0, '{': 0, '[': 0 });
    }
  });
});
