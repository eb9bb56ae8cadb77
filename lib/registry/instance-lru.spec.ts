import { VirtualClock } from '../kernel/clock';
import { InstanceLru, LruEntry } from './instance-lru';

/** A clock that counts its readings. */
class CountingClock extends VirtualClock {
  readings = 0;

  override now(): number {
    this.readings++;
    return super.now();
  }
}

function lruOf(clock: VirtualClock, max = 10, idleTimeoutMs = 60_000, holdsState = (_: string) => false) {
  const evicted: string[] = [];
  const lru = new InstanceLru<string>({ max, idleTimeoutMs }, clock, holdsState, (entry) => evicted.push(entry.key));
  const add = (key: string) => lru.add(key, () => `instance of ${key}`) as LruEntry<string>;
  return { lru, evicted, add };
}

describe('InstanceLru', () => {
  it('reads the clock once per 64 hits of held entries, not once per hit', () => {
    const clock = new CountingClock();
    const { lru, add } = lruOf(clock);
    const a = add('a');
    const b = add('b');
    clock.readings = 0;
    for (let i = 0; i < 640; i++) expect(lru.hit(i % 2 === 0 ? a : b)).toBe(true);
    expect(clock.readings).toBe(10);
    expect(a.uses + b.uses).toBe(642);
  });

  it('never takes an entry used only through hits for idle before idleTimeout has passed since its last hit', async () => {
    const clock = new VirtualClock();
    const { lru, evicted, add } = lruOf(clock, 10, 60_000);
    const a = add('a');
    // Hit at 59 s, long after the last sweep: the sweep at 60 s dates that hit at 60 s, not at a's making.
    await clock.advance(59_000);
    lru.hit(a);
    await clock.advance(1_000);
    expect(lru.list().map((e) => e.key)).toEqual(['a']);
    await clock.advance(30_000);
    add('b');
    expect(evicted).toEqual([]);
    await clock.advance(29_999);
    expect(lru.list().map((e) => e.key)).toEqual(['a', 'b']);
    await clock.advance(1);
    expect(lru.list().map((e) => e.key)).toEqual(['b']);
    expect(evicted).toEqual(['a']);
    expect(lru.hit(a)).toBe(false);
  });

  it('evicts an entry idle since its last hit within idleTimeout and one sweep interval, on hits of other entries alone', async () => {
    const clock = new VirtualClock();
    const { lru, evicted, add } = lruOf(clock, 10, 60_000);
    const a = add('a');
    const b = add('b');
    lru.hit(a);
    // b is hit steadily, 64 hits a second; a never again.
    let seconds = 0;
    while (!evicted.includes('a') && seconds < 200) {
      await clock.advance(1_000);
      seconds++;
      for (let i = 0; i < 64; i++) lru.hit(b);
    }
    expect(seconds).toBeGreaterThanOrEqual(60);
    expect(seconds).toBeLessThanOrEqual(60 + 15 + 1);
    expect(lru.hit(b)).toBe(true);
  });

  it('evicts the least recently used entry past max, in the order of hits and lookups', () => {
    const clock = new VirtualClock();
    const { lru, evicted, add } = lruOf(clock, 3);
    const a = add('a');
    add('b');
    const c = add('c');
    lru.hit(a);
    lru.use('b');
    lru.hit(c);
    add('d');
    expect(evicted).toEqual(['a']);
    lru.hit(c);
    add('e');
    expect(evicted).toEqual(['a', 'b']);
  });

  it('passes over entries that hold state, by hits or not, and makes nothing when every entry does', () => {
    const clock = new VirtualClock();
    const { lru, evicted, add } = lruOf(clock, 2, 60_000, (instance) => instance.endsWith('a'));
    const a = add('a');
    add('b');
    lru.hit(a);
    add('c');
    expect(evicted).toEqual(['b']);
    const { lru: full, add: addFull } = lruOf(clock, 1, 60_000, () => true);
    addFull('x');
    expect(full.add('y', () => 'y')).toBeUndefined();
  });
});
