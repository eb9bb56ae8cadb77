import { OVERCHARGE_REFERENCE, overchargeChart, overchargeTable, runOvercharge } from './overcharge';

describe('overcharge scenario', () => {
  it('one key per payment charges exactly 99,900p in 100 rows; a key per attempt charges every attempt, as in the reference run', async () => {
    const result = await runOvercharge();
    const [perAttempt, perPayment] = result.rows;

    expect(perPayment).toMatchObject({ total: 99_900, rows: 100 });
    // The retries happened and were answered from the store, not charged again.
    expect(perPayment.attempts).toBeGreaterThan(100);
    expect(perPayment.replayed).toBe(perPayment.attempts - 100);

    expect(perAttempt.total).toBeGreaterThan(99_900);
    expect(perAttempt.rows).toBe(perAttempt.attempts);
    expect(perAttempt.replayed).toBe(0);
    // Python's generator, seeded as the reference model seeds it, loses the same replies: its figures exactly.
    expect(perAttempt).toMatchObject(OVERCHARGE_REFERENCE.keyPerAttempt);

    expect(overchargeTable(result)).toMatch(
      /one key per payment\s+99,900p\s+99,900p\s+100\s+100\s+\d+\s+\d+\s+\d+\s+correct/,
    );
    expect(overchargeChart(result).match(/<polyline/g)).toHaveLength(3);
  });
});
