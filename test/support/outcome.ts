import { VirtualClock } from '../../lib/kernel/clock';

/** How a promise a test watches has settled so far, and when (on the test's clock). */
export interface Outcome<T> {
  status: 'pending' | 'fulfilled' | 'rejected';
  value?: T;
  error?: unknown;
  at?: number;
}

/** Watches `promise`, so a test can look at its outcome before and after advancing `clock`. */
export function track<T>(clock: VirtualClock, promise: Promise<T>): Outcome<T> {
  const outcome: Outcome<T> = { status: 'pending' };
  promise.then(
    (value) => Object.assign(outcome, { status: 'fulfilled', value, at: clock.now() }),
    (error: unknown) => Object.assign(outcome, { status: 'rejected', error, at: clock.now() }),
  );
  return outcome;
}
