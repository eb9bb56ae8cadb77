import { rm } from 'node:fs/promises';
import { RunningServer } from './postgres-server';

/** Global slot through which globalSetup hands its servers to globalTeardown (they share Jest's main process). */
export const HARNESS = Symbol.for('resilience4nest:test-servers');

/** What the global setup started. */
export interface HarnessState {
  /** Temporary folder holding every server's data. */
  readonly root: string;
  /** Servers to stop. */
  readonly servers: RunningServer[];
}

/** Stops every server (each within its own bound) and deletes the data folder. */
export async function stopHarness(state: HarnessState): Promise<void> {
  await Promise.all(state.servers.splice(0).map((server) => server.stop()));
  await rm(state.root, { recursive: true, force: true });
}
