import { Injectable } from '@nestjs/common';
import { Bulkhead, BulkheadFullError, ResilienceRegistry, VirtualClock } from '../../lib';
import { bootScenario, track } from '../../scenarios/kit';
import { report } from '../support/report';

/*
 * The bulkhead example of the README's policy semantics: 5 concurrent
 * calls, a queue of 10, 50 simultaneous callers. 15 get in (5 run, 10
 * wait), the other 35 are refused at once rather than piling up.
 */

const WORK_MS = 100;
const CALLERS = 50;

/** Work that takes 100 ms and counts how many copies of it run at once. */
@Injectable()
class Inventory {
  running = 0;
  maxRunning = 0;
  started = 0;

  constructor(private readonly clock: VirtualClock) {}

  @Bulkhead('inventory')
  async reserve(item: number): Promise<number> {
    this.started++;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, WORK_MS));
    this.running--;
    return item;
  }
}

describe('scenario (b): bulkhead of 5 with a queue of 10, 50 simultaneous calls', () => {
  it('admits exactly 15, refuses 35 at t=0 with BulkheadFullError, and completes the 15', async () => {
    const { moduleRef, clock } = await bootScenario([Inventory], {
      // maxWaitDuration covers the slowest waiter (2 x 100 ms behind the first 5), so no admitted call times out.
      bulkhead: { instances: { inventory: { maxConcurrentCalls: 5, queueCapacity: 10, maxWaitDuration: '1s' } } },
    });
    const inventory = moduleRef.get(Inventory);
    const bulkhead = moduleRef.get(ResilienceRegistry).bulkhead('inventory');
    const calls = Array.from({ length: CALLERS }, (_, i) => track(clock, () => inventory.reserve(i)));

    await clock.advance(0);
    const rejected = calls.filter((c) => c.error !== undefined);
    expect(rejected).toHaveLength(35);
    for (const c of rejected) {
      expect(c.error).toBeInstanceOf(BulkheadFullError);
      expect(c.error).toMatchObject({ instance: 'inventory', reason: 'queue-full' });
      expect(c.settledAt).toBe(0);
    }
    // The first 15 callers are the admitted ones (FIFO), the last 35 the refused.
    expect(calls.slice(15).every((c) => c.error instanceof BulkheadFullError)).toBe(true);
    expect(calls.slice(0, 15).every((c) => c.settledAt === undefined)).toBe(true);
    expect(inventory.started).toBe(5);
    expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 0, maxAllowedConcurrentCalls: 5, queueDepth: 10 });

    await clock.advance(3 * WORK_MS);
    const admitted = calls.slice(0, 15);
    expect(admitted.map((c) => c.value)).toEqual(Array.from({ length: 15 }, (_, i) => i));
    // Three waves of 5: the queue hands each freed permit to the next waiter.
    expect(admitted.map((c) => c.settledAt)).toEqual([
      ...Array(5).fill(100),
      ...Array(5).fill(200),
      ...Array(5).fill(300),
    ]);
    expect(inventory.started).toBe(15);
    expect(inventory.maxRunning).toBe(5);
    expect(bulkhead.metrics).toEqual({ availableConcurrentCalls: 5, maxAllowedConcurrentCalls: 5, queueDepth: 0 });
    expect(clock.pendingTimers).toBe(0);

    report(
      `scenario (b): bulkhead 5 + queue 10, ${CALLERS} simultaneous calls of ${WORK_MS} ms\n` +
        `  admitted ${admitted.length} (completed at ${[...new Set(admitted.map((c) => c.settledAt))].join('/')} ms), ` +
        `rejected ${rejected.length} at t=0 with BulkheadFullError, max running ${inventory.maxRunning}`,
    );
    await moduleRef.close();
  });
});
