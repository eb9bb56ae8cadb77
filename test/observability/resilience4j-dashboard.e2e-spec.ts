import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import request from 'supertest';
import { ResilienceEndpointsModule } from '../../lib';
import { bootApp, driveTraffic, parseScrape, Sample } from './kit';

/*
 * Resilience4j's own Grafana dashboard (test/fixtures/resilience4j, Apache-2.0,
 * see NOTICE.md there), imported unchanged, against a scrape of a booted app:
 * each PromQL selector is evaluated as Prometheus would (after Grafana fills
 * in the template variables from the same scrape), and every panel this
 * module can feed must select at least one series.
 */
const FILE = join(__dirname, '..', 'fixtures', 'resilience4j', 'grafana_dashboard.json');
const TEXT = readFileSync(FILE);

interface Target {
  expr: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
}
interface Variable {
  name: string;
  includeAll?: boolean;
  query: { query: string };
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Variable[] };
}

/** Series Resilience4j's dashboard reads that no Node process can have, and why. */
const CANNOT_FEED: Record<string, string> = {
  jvm_info: 'a JVM metric (Micrometer JvmInfoMetrics); the Application variable reads its `application` label',
  resilience4j_circuitbreaker_max_buffered_calls:
    "no longer exported by Resilience4j 2.x's own Micrometer binder either",
};

/** Labels Prometheus adds to every series of a scrape target. */
const TARGET = { instance: '10.0.0.7:3000', job: 'orders' };

type Matcher = { label: string; op: string; value: string };

/** Prometheus's reading of one matcher against a series (an absent label is the empty string; regexes are anchored). */
function holds(labels: Readonly<Record<string, string>>, { label, op, value }: Matcher): boolean {
  const actual = labels[label] ?? '';
  const re = new RegExp(`^(?:${value})$`);
  if (op === '=') return actual === value;
  if (op === '!=') return actual !== value;
  if (op === '=~') return re.test(actual);
  return !re.test(actual);
}

/** Every `metric{matchers}` or bare `metric` selector of an expression. */
function selectors(expr: string): Array<{ metric: string; matchers: Matcher[] }> {
  const out: Array<{ metric: string; matchers: Matcher[] }> = [];
  for (const [, metric, body] of expr.matchAll(/\b([a-z_][a-z0-9_]*)\s*(?:\{([^}]*)\})?/g)) {
    if (!/^(resilience4j_|jvm_)/.test(metric)) continue;
    const matchers = [...(body ?? '').matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map(([, label, op, value]) => ({
      label,
      op,
      value,
    }));
    out.push({ metric, matchers });
  }
  return out;
}

/** Grafana's value of each template variable on first load: all values for an "All" variable, else the first (or nothing). */
function variables(dashboard: Dashboard, series: readonly Sample[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const variable of dashboard.templating.list) {
    const [, metric, label] = /label_values\(\s*([a-z_0-9]+)\s*,\s*(\w+)\s*\)/.exec(variable.query.query) ?? [];
    const found = [
      ...new Set(series.filter((s) => s.name === metric && label in s.labels).map((s) => s.labels[label])),
    ].sort();
    values[variable.name] = variable.includeAll ? found.join('|') : (found[0] ?? '');
  }
  return values;
}

function expand(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$(\w+)/g, (whole, name: string) => values[name] ?? whole);
}

/** What each panel's targets select from the scrape. */
function evaluate(
  dashboard: Dashboard,
  series: readonly Sample[],
): Array<{ panel: string; metric: string; matched: number }> {
  const values = variables(dashboard, series);
  return dashboard.panels
    .filter((p) => p.type !== 'row')
    .flatMap((panel) =>
      (panel.targets ?? []).flatMap((t) =>
        selectors(expand(t.expr, values)).map(({ metric, matchers }) => ({
          panel: panel.title,
          metric,
          matched: series.filter((s) => s.name === metric && matchers.every((m) => holds(s.labels, m))).length,
        })),
      ),
    );
}

async function scrape(defaultLabels?: Record<string, string>): Promise<Sample[]> {
  const registry = new Registry();
  if (defaultLabels) registry.setDefaultLabels(defaultLabels);
  const booted = await bootApp(
    { metrics: { registry } },
    { imports: [ResilienceEndpointsModule.forRoot({ metrics: true })] },
  );
  try {
    await driveTraffic(booted.clock, booted.shop);
    const text = (await request(booted.app.getHttpServer()).get('/metrics').expect(200)).text;
    return parseScrape(text).map((s) => ({ ...s, labels: { ...s.labels, ...TARGET } }));
  } finally {
    await booted.app.close();
  }
}

describe("Resilience4j's Grafana dashboard, imported unchanged", () => {
  const dashboard = JSON.parse(TEXT.toString('utf8')) as Dashboard;
  let series: Sample[];

  beforeAll(async () => (series = await scrape()));

  it('is the file as Resilience4j publishes it', () => {
    const blob = createHash('sha1').update(`blob ${TEXT.length}\0`).update(TEXT).digest('hex');
    expect(blob).toBe('89281a3e6ae32cb54b77b713b9fa395d6e111421');
  });

  it('shows data on every panel, and only the series listed as unfeedable select nothing', () => {
    const results = evaluate(dashboard, series);
    const empty = [...new Set(results.filter((r) => r.matched === 0).map((r) => r.metric))].sort();
    expect(empty).toEqual(Object.keys(CANNOT_FEED).filter((m) => m !== 'jvm_info'));
    const panels = [...new Set(results.map((r) => r.panel))];
    expect(panels).toHaveLength(10);
    for (const panel of panels)
      expect({ panel, fed: results.some((r) => r.panel === panel && r.matched > 0) }).toEqual({ panel, fed: true });
  });

  it('fills its name pickers from our series, and its Application picker stays empty (there is no jvm_info)', () => {
    const values = variables(dashboard, series);
    expect(values.application).toBe('');
    expect(values.circuitbreaker_name).toBe('psp');
    expect(values.retry_name.split('|')).toContain('inventory');
    expect(values.bulkhead_name.split('|')).toContain('pool');
  });

  it("shows the breaker's state the way its stat panels count it: one open, none closed or half open", () => {
    const count = (state: RegExp): number =>
      series
        .filter((s) => s.name === 'resilience4j_circuitbreaker_state' && state.test(s.labels.state))
        .reduce((sum, s) => sum + s.value, 0);
    expect([count(/^closed$/), count(/^(open|forced_open)$/), count(/^half_open$/)]).toEqual([0, 1, 0]);
  });
});

describe('with an application label (prom-client default labels), as docs/migrating-from-resilience4j.md says', () => {
  const unchanged = JSON.parse(TEXT.toString('utf8')) as Dashboard;
  let series: Sample[];

  beforeAll(async () => (series = await scrape({ application: 'orders' })));

  it('every series carries it', () => {
    expect(
      series.filter((s) => s.name.startsWith('resilience4j_')).every((s) => s.labels.application === 'orders'),
    ).toBe(true);
  });

  it('the unchanged dashboard loses its retry and bulkhead panels, whose Application picker reads jvm_info', () => {
    const results = evaluate(unchanged, series);
    const dark = [...new Set(results.map((r) => r.panel))].filter((panel) =>
      results.every((r) => r.panel !== panel || r.matched === 0),
    );
    expect(dark.sort()).toEqual(['Bulkhead: $bulkhead_name', 'Rate retryable calls: $retry_name']);
  });

  it('with the Application variable reading resilience4j_circuitbreaker_state instead, every panel shows data again', () => {
    const edited = JSON.parse(TEXT.toString('utf8')) as Dashboard;
    const application = edited.templating.list.find((v) => v.name === 'application')!;
    application.query.query = 'label_values(resilience4j_circuitbreaker_state, application)';
    expect(variables(edited, series).application).toBe('orders');
    const results = evaluate(edited, series);
    const fed = new Set(results.filter((r) => r.matched > 0).map((r) => r.panel));
    expect(fed.size).toBe(10);
  });
});
