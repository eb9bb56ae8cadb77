import { OpenMetricsContentType, Registry } from 'prom-client';
import { attachCollectors, Collector, FamilyDefinition } from './metric-family';

const calls: FamilyDefinition = { name: 'test_calls_total', help: 'Calls', type: 'counter', combine: 'sum' };
const rate: FamilyDefinition = { name: 'test_rate', help: 'Rate', type: 'gauge', combine: 'max' };
const seconds: FamilyDefinition = { name: 'test_seconds', help: 'Durations', type: 'histogram', combine: 'sum' };

const counter =
  (name: string, value: number): Collector =>
  (emit) =>
    emit({ name }, value);

describe('metric families in a prom-client registry', () => {
  it('expose every attached collector, adding counters and keeping the highest gauge for equal labels', async () => {
    const registry = new Registry();
    const detachA = attachCollectors(
      registry,
      [
        [calls, counter('x', 2)],
        [rate, counter('x', 10)],
      ],
      [],
    );
    const detachB = attachCollectors(
      registry,
      [
        [calls, counter('x', 3)],
        [rate, counter('x', 40)],
      ],
      [],
    );
    attachCollectors(registry, [[calls, counter('y', 1)]], []);
    const text = await registry.metrics();
    expect(text).toContain(
      '# TYPE test_calls_total counter\ntest_calls_total{name="x"} 5\ntest_calls_total{name="y"} 1',
    );
    expect(text).toContain('# TYPE test_rate gauge\ntest_rate{name="x"} 40');
    detachB();
    expect(await registry.metrics()).toContain('test_calls_total{name="x"} 2');
    detachA();
    expect(await registry.metrics()).not.toContain('name="x"');
  });

  it('write histogram samples under their suffixed names', async () => {
    const registry = new Registry();
    attachCollectors(
      registry,
      [
        [
          seconds,
          (emit) => {
            emit({ name: 'x', le: '0.1' }, 1, '_bucket');
            emit({ name: 'x', le: '+Inf' }, 2, '_bucket');
            emit({ name: 'x' }, 0.3, '_sum');
            emit({ name: 'x' }, 2, '_count');
          },
        ],
      ],
      [0.1],
    );
    expect(await registry.metrics()).toBe(
      '# HELP test_seconds Durations\n# TYPE test_seconds histogram\n' +
        'test_seconds_bucket{name="x",le="0.1"} 1\ntest_seconds_bucket{name="x",le="+Inf"} 2\ntest_seconds_sum{name="x"} 0.3\ntest_seconds_count{name="x"} 2\n',
    );
  });

  it('work in the OpenMetrics format and in JSON', async () => {
    const registry = new Registry<OpenMetricsContentType>();
    registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    attachCollectors(registry, [[calls, counter('x', 1)]], []);
    expect(await registry.metrics()).toContain('# TYPE test_calls counter\ntest_calls_total{name="x"} 1');
    expect(await registry.getMetricsAsJSON()).toEqual([
      {
        name: 'test_calls',
        help: 'Calls',
        type: 'counter',
        aggregator: 'sum',
        values: [{ labels: { name: 'x' }, value: 1, metricName: undefined }],
      },
    ]);
  });

  it('are unregistered only when the last collector leaves, and detaching twice is harmless', () => {
    const registry = new Registry();
    const detachA = attachCollectors(registry, [[calls, counter('a', 1)]], []);
    const detachB = attachCollectors(registry, [[calls, counter('b', 1)]], []);
    detachA();
    detachA();
    expect(registry.getSingleMetric('test_calls_total')).toBeDefined();
    detachB();
    expect(registry.getSingleMetric('test_calls_total')).toBeUndefined();
  });
});
