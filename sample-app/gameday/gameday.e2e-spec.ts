import { PhaseRow, runGameDay, SCENARIOS } from './gameday';

const scenario = (name: string) => SCENARIOS.find((s) => s.name === name)!;
const BASELINE: PhaseRow = {
  phase: 'baseline',
  requests: 10,
  full: 10,
  stalePrice: 0,
  degradedParts: 0,
  errors: 0,
  health: 200,
  fallbackCheck: 'up',
  fallbackShare: 0,
  fallbackAnswers: 0,
  staleAnswers: 0,
  injectedFaults: 0,
  ratesBreaker: 'closed',
};

/** The game days of docs/fault-injection.md: what users see, and that the alert signals move. */
describe('game days on the sample shop', () => {
  it('dependency down: the last known rate within its shelf life, marked not fresh; the fallback share and the breaker move', async () => {
    expect(await runGameDay(scenario('dependency-down'))).toEqual([
      BASELINE,
      {
        phase: 'rates down',
        requests: 30,
        full: 0,
        stalePrice: 30,
        degradedParts: 0,
        errors: 0,
        health: 200,
        fallbackCheck: 'up',
        fallbackShare: 25,
        fallbackAnswers: 30,
        staleAnswers: 30,
        injectedFaults: 10,
        ratesBreaker: 'open',
      },
    ]);
  }, 120_000);

  it('dependency and its cache store down together: honest 503s, the failing store never fails a call itself', async () => {
    const rows = await runGameDay(scenario('dependency-and-cache-down'));
    expect(
      rows.map((r) => [
        r.phase,
        r.full,
        r.stalePrice,
        r.staleAnswers,
        r.errors,
        r.fallbackShare,
        r.fallbackAnswers,
        r.ratesBreaker,
      ]),
    ).toEqual([
      ['baseline', 10, 0, 0, 0, 0, 0, 'closed'],
      ['rates down', 0, 10, 10, 0, 17, 10, 'open'],
      ['rates and cache store down', 0, 0, 0, 30, 27, 30, 'open'],
    ]);
  }, 120_000);

  it('last rate past its shelf life: honest 503s, never a rate older than the limit', async () => {
    const rows = await runGameDay(scenario('cache-too-old'));
    expect(
      rows.map((r) => [r.phase, r.full, r.stalePrice, r.staleAnswers, r.errors, r.fallbackShare, r.fallbackAnswers]),
    ).toEqual([
      ['baseline', 10, 0, 0, 0, 0, 0],
      ['rates down', 0, 10, 10, 0, 17, 10],
      ['last rate too old', 0, 0, 0, 30, 33, 30],
    ]);
  }, 120_000);

  it('cache empty (cold start): honest 503s from the first request, never a made-up rate', async () => {
    const [row] = await runGameDay(scenario('cache-empty'));
    expect(row).toMatchObject({
      full: 0,
      stalePrice: 0,
      staleAnswers: 0,
      errors: 30,
      health: 200,
      fallbackShare: 33,
      fallbackAnswers: 30,
      injectedFaults: 10,
      ratesBreaker: 'open',
    });
  }, 120_000);

  it('many at once: every page degraded but answered, and the fallback-share check takes /health down', async () => {
    const rows = await runGameDay(scenario('many-at-once'));
    const { injectedFaults, ...seen } = rows[2];
    expect(seen).toEqual({
      phase: 'rates, inventory, recommendations down',
      requests: 30,
      full: 0,
      stalePrice: 30,
      degradedParts: 30,
      errors: 0,
      health: 503,
      fallbackCheck: 'down',
      fallbackShare: 67,
      fallbackAnswers: 90,
      staleAnswers: 30,
      ratesBreaker: 'open',
    });
    // Concurrent views share a recommendations call while it is in flight; how many arrive while one is
    // depends on the real interleaving of the 30 requests. Without coalescing the wave made 50 calls.
    expect(injectedFaults).toBeGreaterThanOrEqual(30);
    expect(injectedFaults).toBeLessThan(50);
  }, 120_000);
});
