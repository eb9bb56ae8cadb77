import { ExpiryQueue } from './expiry-queue';
import type { TimedEntry } from '../../engine/timed-attempt';

const entry = (deadline: number): TimedEntry => ({
  deadline,
  settled: false,
  expire: () => undefined,
  dequeued: () => undefined,
});

/** Takes every entry off the front, in order. */
function drain(queue: ExpiryQueue): number[] {
  const out: number[] = [];
  for (let e = queue.peek(); e !== undefined; e = queue.peek()) {
    out.push(e.deadline);
    queue.shift();
  }
  return out;
}

describe('ExpiryQueue', () => {
  it('is empty at first', () => {
    const queue = new ExpiryQueue();
    expect(queue.size).toBe(0);
    expect(queue.peek()).toBeUndefined();
  });

  it('gives entries back first in, first out, across wrap-arounds and growth', () => {
    const queue = new ExpiryQueue();
    let next = 0;
    const expected: number[] = [];
    // Push 10 and take 7 each round, so the front walks round the ring while it grows past 16 slots.
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 10; i++) {
        queue.push(entry(next));
        expected.push(next++);
      }
      for (let i = 0; i < 7; i++) {
        expect(queue.peek()?.deadline).toBe(expected.shift());
        queue.shift();
      }
      expect(queue.size).toBe(expected.length);
    }
    expect(drain(queue)).toEqual(expected);
    expect(queue.size).toBe(0);
  });

  it('keeps working after a burst that grew it past its shrink size emptied it', () => {
    const queue = new ExpiryQueue();
    for (let i = 0; i < 3000; i++) queue.push(entry(i));
    expect(drain(queue)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    queue.push(entry(7));
    queue.push(entry(8));
    expect(drain(queue)).toEqual([7, 8]);
  });

  it('lets go of an entry once it is taken', () => {
    const queue = new ExpiryQueue();
    queue.push(entry(1));
    queue.shift();
    expect(queue.peek()).toBeUndefined();
    expect((queue as unknown as { slots: unknown[] }).slots.every((slot) => slot === undefined)).toBe(true);
  });
});
