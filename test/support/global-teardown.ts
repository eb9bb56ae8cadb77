import { HARNESS, HarnessState, stopHarness } from './harness-state';

/** Jest globalTeardown: stops the servers the global setup started and deletes their data. */
export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<symbol, unknown>)[HARNESS] as HarnessState | undefined;
  if (state !== undefined) await stopHarness(state);
}
