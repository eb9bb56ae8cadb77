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

/** Starts the sample app on `port` in a child process (with `env` added) and waits until it answers. */
export async function startApp(port: number, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', 'sample-app/src/main.ts'],
    {
      cwd: root,
      env: { ...process.env, ...env, PORT: String(port), TS_NODE_PROJECT: join(root, 'tsconfig.json') },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the sample app exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/probe/bare`)).ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill();
  throw new Error('the sample app did not answer within 60 s');
}
