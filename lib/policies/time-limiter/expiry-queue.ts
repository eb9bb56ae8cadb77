import type { TimedEntry } from '../../engine/timed-attempt';

/** Slots a queue starts with, and shrinks back to once it empties after a burst. */
const INITIAL_SLOTS = 16;
/** A queue that emptied with more slots than this gives them back. */
const SHRINK_ABOVE_SLOTS = 1024;

/**
 * @internal The time limiter's FIFO of entries waiting for the shared
 * timer, on a ring buffer whose size is a power of two: once it has grown to
 * the number of calls in flight, queueing and taking allocate nothing (an
 * array emptied by `length = 0` gives up its storage, so every call would
 * grow a new one).
 */
export class ExpiryQueue {
  private slots: (TimedEntry | undefined)[] = new Array<TimedEntry | undefined>(INITIAL_SLOTS).fill(undefined);
  private head = 0;
  /** Entries queued. */
  size = 0;

  /** Adds `entry` at the back. */
  push(entry: TimedEntry): void {
    if (this.size === this.slots.length) this.grow();
    this.slots[(this.head + this.size) & (this.slots.length - 1)] = entry;
    this.size++;
  }

  /** The front entry; `undefined` when the queue is empty. */
  peek(): TimedEntry | undefined {
    return this.slots[this.head];
  }

  /** Drops the front entry (the queue must not be empty). */
  shift(): void {
    this.slots[this.head] = undefined;
    this.head = (this.head + 1) & (this.slots.length - 1);
    this.size--;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: shrinking only frees memory
    if (this.size === 0 && this.slots.length > SHRINK_ABOVE_SLOTS) {
      this.slots = new Array<TimedEntry | undefined>(INITIAL_SLOTS).fill(undefined);
      this.head = 0;
    }
  }

  private grow(): void {
    const old = this.slots;
    const slots = new Array<TimedEntry | undefined>(old.length * 2).fill(undefined);
    for (let i = 0; i < this.size; i++) slots[i] = old[(this.head + i) & (old.length - 1)];
    this.slots = slots;
    this.head = 0;
  }
}
