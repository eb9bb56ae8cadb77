import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** The repository root. */
export const root = join(__dirname, '..');

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * How long the sample app may take to answer after it is spawned: ts-node
 * compiles it on start, which takes minutes on a machine busy with other
 * work. `LOAD_STARTUP_TIMEOUT` (seconds) overrides it.
 */
export function startupTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.LOAD_STARTUP_TIMEOUT;
  if (given === undefined || given === '') return 300_000;
  const seconds = Number(given);
  if (!(seconds > 0))
    throw new Error(`LOAD_STARTUP_TIMEOUT must be a positive number of seconds, got ${JSON.stringify(given)}`);
  return seconds * 1000;
}

/** Starts the sample app on `port` in a child process (with `env` added) and waits until it answers, telling stderr how long it has waited. */
export async function startApp(port: number, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const timeoutMs = startupTimeoutMs();
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'sample-app/src/main.ts'],
    {
      cwd: root,
      env: { ...process.env, ...env, PORT: String(port), TS_NODE_PROJECT: join(root, 'tsconfig.json') },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const started = Date.now();
  let told = started;
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`the sample app exited with code ${child.exitCode}`);
    try {
      // An app that accepts the connection but is too busy to answer must not hold the wait past its deadline.
      if ((await fetch(`http://127.0.0.1:${port}/probe/bare`, { signal: AbortSignal.timeout(5000) })).ok) return child;
    } catch {
      // not listening yet, or not answering yet
    }
    if (Date.now() - told >= 15_000) {
      told = Date.now();
      process.stderr.write(`  waiting for the sample app to answer: ${Math.round((told - started) / 1000)} s\n`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill();
  throw new Error(
    `the sample app did not answer within ${timeoutMs / 1000} s (set LOAD_STARTUP_TIMEOUT to wait longer)`,
  );
}
