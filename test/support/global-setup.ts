import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunningServer, startPostgres } from './postgres-server';
import { startRedis } from './redis-server';
import { isCi, SERVER_NAMES, TestServerKind, unavailableVariable, urlVariable } from './server-env';
import { HARNESS, HarnessState, stopHarness } from './harness-state';

const STARTERS: Readonly<Record<TestServerKind, (root: string) => Promise<RunningServer>>> = {
  postgres: startPostgres,
  redis: startRedis,
};

/**
 * Jest globalSetup: starts PostgreSQL and Redis on free ports of 127.0.0.1
 * (unless their URL variables are already set) and passes their URLs to the
 * suites in `RESILIENCE_TEST_*_URL`. A server that cannot start leaves its
 * reason in `RESILIENCE_TEST_*_UNAVAILABLE`, so its suites report themselves
 * skipped; under `CI=true` the run fails instead.
 */
export default async function globalSetup(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'resilience4nest-servers-'));
  // As root, PostgreSQL runs as the postgres user, who must be able to enter the folder.
  await chmod(root, 0o755);
  const state: HarnessState = { root, servers: [] };
  (globalThis as Record<symbol, unknown>)[HARNESS] = state;
  const failures: string[] = [];
  await Promise.all(
    (Object.keys(STARTERS) as TestServerKind[]).map(async (kind) => {
      delete process.env[unavailableVariable(kind)];
      if (process.env[urlVariable(kind)]) return;
      try {
        const server = await STARTERS[kind](root);
        state.servers.push(server);
        process.env[urlVariable(kind)] = server.url;
      } catch (error) {
        const reason = `${SERVER_NAMES[kind]} could not be started: ${error instanceof Error ? error.message : String(error)}`;
        process.env[unavailableVariable(kind)] = reason;
        failures.push(reason);
      }
    }),
  );
  if (failures.length === 0) return;
  if (isCi()) {
    await stopHarness(state);
    throw new Error(`CI=true and the store suites need real servers:\n${failures.join('\n')}`);
  }
  process.stderr.write(`\n[resilience4nest tests] store suites will be skipped:\n${failures.join('\n')}\n\n`);
}
