import { Clock, VirtualClock } from '../../kernel/clock';
import { MemoryIdempotencyStore } from './memory-idempotency-store';
import { INVALID_STORE_DURATION } from './idempotency.messages';

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

  it('refuses a new key once maxKeys live keys are held, until the oldest expires; expired keys make room', async () => {
    const bounded = new MemoryIdempotencyStore({ clock, maxKeys: 3 });
    try {
      await fill(bounded, 3, 1_000);
      await clock.advance(400);
      expect(await bounded.claim('one-more', 'f')).toEqual({
        outcome: 'quota_exceeded',
        scope: 'store',
        retryAfterMs: 600,
      });
      // Keys already held still answer.
      expect((await bounded.claim('k0', 'f')).outcome).toBe('completed');
      await clock.advance(600);
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

  it('holds one live key with maxKeys 1', async () => {
    const single = new MemoryIdempotencyStore({ clock, maxKeys: 1 });
    try {
      expect((await single.claim('only', 'f')).outcome).toBe('claimed');
      expect((await single.claim('second', 'f')).outcome).toBe('quota_exceeded');
    } finally {
      single.close();
    }
  });

  it('names the setting when complete() is given a bad TTL or renew() a bad lease', async () => {
    await expect(store.complete('k', 'token', ANSWER, 0)).rejects.toThrow(
      INVALID_STORE_DURATION('MemoryIdempotencyStore', 'ttlMs', 0),
    );
    await expect(store.renew('k', 'token', -1)).rejects.toThrow(
      INVALID_STORE_DURATION('MemoryIdempotencyStore', 'leaseMs', -1),
    );
  });
});

// Keys expiring between whole seconds: the store itself must hide them until the sweep frees them.
describe('MemoryIdempotencyStore between sweeps', () => {
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock(1_000_000);
  });

  it('treats a key as gone from the instant it expires, before the sweep frees it', async () => {
    const store = new MemoryIdempotencyStore({ clock });
    try {
      await fill(store, 1, 1_500);
      await clock.advance(1_499);
      expect((await store.get('k0'))?.state).toBe('completed');
      await clock.advance(1);
      expect(await store.get('k0')).toBeUndefined();
      expect(store.size).toBe(1);
      expect((await store.claim('k0', 'another fingerprint')).outcome).toBe('claimed');
    } finally {
      store.close();
    }
  });

  it('leaves expired keys to the whole-second sweep while there is room for a new key', async () => {
    const store = new MemoryIdempotencyStore({ clock, maxKeys: 3 });
    try {
      await fill(store, 2, 1_500);
      await clock.advance(1_500);
      expect((await store.claim('fresh', 'f')).outcome).toBe('claimed');
      expect(store.size).toBe(3);
      await clock.advance(500);
      expect(store.size).toBe(1);
    } finally {
      store.close();
    }
  });

  it('when full, reclaims an expired key in place and sweeps expired keys to make room for a new one', async () => {
    const store = new MemoryIdempotencyStore({ clock, maxKeys: 3 });
    try {
      await fill(store, 3, 1_500);
      await clock.advance(1_500);
      expect((await store.claim('k0', 'f')).outcome).toBe('claimed');
      expect(store.size).toBe(3);
      expect((await store.claim('one-more', 'f')).outcome).toBe('claimed');
      expect(store.size).toBe(2);
    } finally {
      store.close();
    }
  });

  it('frees each key within a second of its own expiry, whatever order the keys were claimed in', async () => {
    const store = new MemoryIdempotencyStore({ clock });
    try {
      // 50 keys expiring 1.5 s, 2.5 s, ... 50.5 s from now, claimed in a scrambled order (19 is prime to 50).
      for (let i = 0; i < 50; i++) {
        const second = ((i * 19) % 50) + 1;
        const ms = second * 1_000 + 500;
        await store.claim(`k${second}`, 'f', { leaseMs: ms, ttlMs: ms });
      }
      const sizes: number[] = [];
      for (let second = 1; second <= 51; second++) {
        await clock.advance(1_000);
        sizes.push(store.size);
      }
      // After the sweep at second s, the keys expiring at 1.5 s ... (s - 0.5) s are gone.
      expect(sizes).toEqual(Array.from({ length: 51 }, (_, i) => 50 - i));
    } finally {
      store.close();
    }
  });

  it('arms its sweep timer once for keys due in the same second', async () => {
    let armed = 0;
    const counting: Clock = {
      now: () => clock.now(),
      setTimeout: (callback, ms) => {
        armed++;
        return clock.setTimeout(callback, ms);
      },
      clearTimeout: (handle) => clock.clearTimeout(handle),
    };
    const store = new MemoryIdempotencyStore({ clock: counting });
    try {
      for (let i = 0; i < 5; i++) {
        await store.claim(`k${i}`, 'f', { leaseMs: 1_500, ttlMs: 1_500 });
        await clock.advance(100);
      }
      expect(armed).toBe(1);
      await clock.advance(1_500);
      expect(store.size).toBe(0);
    } finally {
      store.close();
    }
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

describe('MemoryIdempotencyStore per-principal quota', () => {
  let clock: VirtualClock;
  let store: MemoryIdempotencyStore;
  const LONG = { leaseMs: 60_000, ttlMs: 60_000 };

  beforeEach(() => {
    clock = new VirtualClock(1_000_000);
    store = new MemoryIdempotencyStore({ clock, maxKeys: 10, maxKeysPerPrincipal: 3 });
  });
  afterEach(() => store.close());

  const claimAs = (principal: string | undefined, key: string) =>
    store.claim(key, 'f', { ...LONG, ...(principal === undefined ? {} : { principal }) });

  it('refuses a principal its fourth key until its oldest expires, while other principals still get keys', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await claimAs('alice', `a${i}`)).outcome).toBe('claimed');
      await clock.advance(10_000);
    }
    expect(await claimAs('alice', 'a3')).toEqual({
      outcome: 'quota_exceeded',
      scope: 'principal',
      retryAfterMs: 30_000,
    });
    expect((await claimAs('bob', 'b0')).outcome).toBe('claimed');
    // Keys it holds still answer.
    expect((await claimAs('alice', 'a0')).outcome).toBe('in_progress');
    await clock.advance(29_999);
    expect((await claimAs('alice', 'a3')).outcome).toBe('quota_exceeded');
    await clock.advance(1);
    expect((await claimAs('alice', 'a3')).outcome).toBe('claimed');
  });

  it('counts a completed key until it expires, and a released key no longer', async () => {
    const first = await claimAs('alice', 'a0');
    if (first.outcome !== 'claimed') throw new Error(first.outcome);
    await claimAs('alice', 'a1');
    const third = await claimAs('alice', 'a2');
    if (third.outcome !== 'claimed') throw new Error(third.outcome);
    await clock.advance(5_000);
    // Completing a0 moves its expiry to 60 s after completion.
    await store.complete('a0', first.token, ANSWER, 60_000);
    expect(await claimAs('alice', 'a3')).toMatchObject({ outcome: 'quota_exceeded', scope: 'principal' });
    await store.release('a2', third.token);
    expect((await claimAs('alice', 'a3')).outcome).toBe('claimed');
  });

  it('does not count keys claimed without a principal against any principal', async () => {
    for (let i = 0; i < 5; i++) expect((await claimAs(undefined, `k${i}`)).outcome).toBe('claimed');
    for (let i = 0; i < 3; i++) expect((await claimAs('alice', `a${i}`)).outcome).toBe('claimed');
  });

  it('when the whole store is full, answers when its earliest key expires', async () => {
    for (const principal of ['a', 'b', 'c']) {
      for (let i = 0; i < 3; i++) await claimAs(principal, `${principal}${i}`);
      await clock.advance(1_000);
    }
    await claimAs(undefined, 'anonymous');
    expect(store.size).toBe(10);
    expect(await claimAs('d', 'd0')).toEqual({ outcome: 'quota_exceeded', scope: 'store', retryAfterMs: 57_000 });
  });

  it('defaults the quota to a tenth of maxKeys', async () => {
    const small = new MemoryIdempotencyStore({ clock, maxKeys: 20 });
    try {
      for (let i = 0; i < 2; i++)
        expect((await small.claim(`a${i}`, 'f', { principal: 'alice' })).outcome).toBe('claimed');
      expect((await small.claim('a2', 'f', { principal: 'alice' })).outcome).toBe('quota_exceeded');
    } finally {
      small.close();
    }
  });

  it('with the defaults, one principal gets 10,000 of the 100,000 keys and the next principal still gets one', async () => {
    const defaults = new MemoryIdempotencyStore({ clock });
    try {
      let claimed = 0;
      for (let i = 0; i < 10_500; i++) {
        if ((await defaults.claim(`a${i}`, 'f', { principal: 'alice' })).outcome === 'claimed') claimed++;
      }
      expect(claimed).toBe(10_000);
      expect((await defaults.claim('b0', 'f', { principal: 'bob' })).outcome).toBe('claimed');
    } finally {
      defaults.close();
    }
  });

  it('refuses a maxKeysPerPrincipal that is not a positive integer', () => {
    expect(() => new MemoryIdempotencyStore({ maxKeysPerPrincipal: 1.5 })).toThrow(
      /MemoryIdempotencyStore: 'maxKeysPerPrincipal' must be a positive integer, got 1.5/,
    );
  });
});
