import { VirtualClock } from '../clock';
import { MemoryIdempotencyStore } from './memory-idempotency-store';
import { MEMORY_STORE_FULL } from './idempotency.messages';

const ANSWER = { kind: 'http', status: 201, headers: {}, body: 'x'.repeat(1_000) } as const;

async function fill(store: MemoryIdempotencyStore, count: number, ttlMs: number, prefix = 'k'): Promise<void> {
  for (let i = 0; i < count; i++) {
    const claim = await store.claim(`${prefix}${i}`, 'f', { leaseMs: ttlMs, ttlMs });
    if (claim.outcome !== 'claimed') throw new Error(`claim ${i}: ${claim.outcome}`);
    await store.complete(`${prefix}${i}`, claim.token, ANSWER, ttlMs);
  }
}

describe('MemoryIdempotencyStore housekeeping', () => {
  let clock: VirtualClock;
  let store: MemoryIdempotencyStore;

  beforeEach(() => {
    clock = new VirtualClock(1_000_000);
    store = new MemoryIdempotencyStore({ clock });
  });
  afterEach(() => store.close());

  it('frees 5,000 expired keys by itself within a second of their expiry, with nobody reading them', async () => {
    await fill(store, 5_000, 1_000);
    expect(store.size).toBe(5_000);
    await clock.advance(999);
    expect(store.size).toBe(5_000);
    await clock.advance(1_001);
    expect(store.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('keeps a key whose lease was renewed past its first expiry, and frees it once that passes', async () => {
    const claim = await store.claim('k', 'f', { leaseMs: 1_000, ttlMs: 1_000 });
    if (claim.outcome !== 'claimed') throw new Error(claim.outcome);
    await clock.advance(900);
    await store.renew('k', claim.token, 5_000);
    await clock.advance(2_000);
    expect(store.size).toBe(1);
    await clock.advance(5_000);
    expect(store.size).toBe(0);
  });

  it('holds no timer while empty, and none after close()', async () => {
    expect(clock.pendingTimers).toBe(0);
    await fill(store, 3, 60_000);
    expect(clock.pendingTimers).toBe(1);
    store.close();
    expect(clock.pendingTimers).toBe(0);
    await fill(store, 3, 60_000, 'later');
    expect(clock.pendingTimers).toBe(0);
  });

  it('lets cleanupExpired free exactly the expired keys once the sweeper is stopped', async () => {
    store.close();
    await fill(store, 3, 1_000, 'short');
    await fill(store, 2, 60_000, 'long');
    await clock.advance(1_000);
    expect(store.size).toBe(5);
    await expect(store.cleanupExpired()).resolves.toBe(3);
    expect(store.size).toBe(2);
    await expect(store.cleanupExpired()).resolves.toBe(0);
  });

  it('refuses a new key once maxKeys live keys are held, naming the bound; expired keys make room', async () => {
    const bounded = new MemoryIdempotencyStore({ clock, maxKeys: 3 });
    try {
      await fill(bounded, 3, 1_000);
      await expect(bounded.claim('one-more', 'f')).rejects.toThrow(MEMORY_STORE_FULL(3));
      // Keys already held still answer.
      expect((await bounded.claim('k0', 'f')).outcome).toBe('completed');
      await clock.advance(1_000);
      expect((await bounded.claim('one-more', 'f')).outcome).toBe('claimed');
    } finally {
      bounded.close();
    }
  });

  it('refuses a maxKeys that is not a positive integer', () => {
    expect(() => new MemoryIdempotencyStore({ maxKeys: 0 })).toThrow(
      /MemoryIdempotencyStore: 'maxKeys' must be a positive integer, got 0/,
    );
  });
});

describe('MemoryIdempotencyStore under churn', () => {
  it('keeps its expiry index within twice the live keys when keys are released long before they expire', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryIdempotencyStore({ clock });
    try {
      for (let i = 0; i < 20_000; i++) {
        const claim = await store.claim(`k${i}`, 'f');
        if (claim.outcome === 'claimed') await store.release(`k${i}`, claim.token);
      }
      expect(store.size).toBe(0);
      expect((store as unknown as { expiries: unknown[] }).expiries.length).toBeLessThanOrEqual(1_024);
    } finally {
      store.close();
    }
  });
});

describe('MemoryIdempotencyStore on any Clock', () => {
  it('works on a clock whose timers return no handle (a TimerHandle may be any value)', async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({
      clock: { now: () => now, setTimeout: () => undefined, clearTimeout: () => undefined },
    });
    const claim = await store.claim('k', 'f', { leaseMs: 1_000, ttlMs: 1_000 });
    if (claim.outcome !== 'claimed') throw new Error(`expected a claim, got ${claim.outcome}`);
    expect(await store.complete('k', claim.token, ANSWER, 1_000)).toBe(true);
    now += 1_001;
    expect((await store.claim('k', 'f')).outcome).toBe('claimed');
    store.close();
  });
});
