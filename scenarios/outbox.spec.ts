import { serverOrSkip } from '../test/support/server-env';
import { OUTBOX_SCENARIO, outboxChart, outboxTable, runOutboxScenario } from './outbox';

describe('outbox scenario', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  it('through crashes at every point and broker outages, every committed order is applied once and no rolled-back one', async () => {
    const result = await runOutboxScenario(url, {
      ...OUTBOX_SCENARIO,
      orders: 300,
      relayCrashAfterPublish: 0.01,
      outageStart: 0.03,
    });
    // The draws happened: each kind of failure is in the run.
    expect(result.rolledBack).toBeGreaterThan(0);
    expect(result.crashedAfterCommit).toBeGreaterThan(0);
    expect(result.relayCrashes).toBeGreaterThan(0);
    expect(result.outages).toBeGreaterThan(0);
    expect(result.refused).toBeGreaterThan(0);
    expect(result.committed + result.rolledBack).toBe(300);
    // Relay crashes after publishing sent some events twice; the consumer absorbed every duplicate.
    expect(result.published).toBeGreaterThan(result.committed);
    expect(result.duplicatesAbsorbed).toBe(result.published - result.committed);
    expect(result.applied).toBe(result.committed);
    expect(result).toMatchObject({ lost: 0, appliedTwice: 0, phantom: 0 });
    expect(outboxTable(result)).toMatch(/lost \(committed, never applied\)\s+0\n/);
    expect(outboxChart(result)).toContain('<polyline');
  }, 120_000);
});
