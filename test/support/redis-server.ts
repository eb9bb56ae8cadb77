import { ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { RunningServer } from './postgres-server';
import { delay, freePort, LogTail, withTimeout } from './wait';

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
const POLL_MS = 50;
const PORT_ATTEMPTS = 3;

/** How a suite wants its own Redis: on a given port (to restart it there), with the append-only file. */
export interface RedisStartOptions {
  /** The port; default a free one. */
  readonly port?: number;
  /** Keep an append-only file in the working folder, so a restart finds the data again. Default false. */
  readonly appendOnly?: boolean;
  /** With `appendOnly`, when Redis fsyncs the file: before answering each write (`always`, the default here) or once a second (`everysec`, Redis's own default). */
  readonly appendFsync?: 'always' | 'everysec';
}

/**
 * Starts `redis-server` (from PATH, or `REDIS_SERVER_BIN`) on a free port of
 * 127.0.0.1 (or `options.port`), without persistence unless
 * `options.appendOnly`, its working folder under `root`.
 */
export async function startRedis(root: string, options: RedisStartOptions = {}): Promise<RunningServer> {
  const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const dir = join(root, 'redis');
  await mkdir(dir, { recursive: true });
  const appendOnly =
    options.appendOnly === true
      ? ['--appendonly', 'yes', '--appendfsync', options.appendFsync ?? 'always']
      : ['--appendonly', 'no'];
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const log = new LogTail();
    const child = spawn(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...appendOnly, '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.on('data', (chunk: Buffer) => log.push(chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => log.push(chunk.toString('utf8')));
    let gone = false;
    const exited = new Promise<string>((resolve) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        gone = true;
        resolve(
          error.code === 'ENOENT'
            ? `${bin} not found on PATH (install the redis-server package, or set REDIS_SERVER_BIN)`
            : error.message,
        );
      });
      child.once('exit', (code, signal) => {
        gone = true;
        resolve(`redis-server exited (code ${code}, signal ${signal})`);
      });
    });
    const ready = waitForPong(port, () => gone).then(
      () => undefined,
      (error: Error) => error.message,
    );
    const outcome = await Promise.race([ready, exited]);
    if (outcome === undefined) return { url: `redis://127.0.0.1:${port}`, stop: () => stopChild(child) };
    await stopChild(child);
    const portTaken = log.includes('Address already in use');
    if (!portTaken || attempt >= PORT_ATTEMPTS || options.port !== undefined) throw new Error(log.explain(outcome));
  }
}

/** Polls PING until the server answers, within {@link READY_TIMEOUT_MS}, or until it is gone. */
async function waitForPong(port: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !gone()) {
    if (await ping(port)) return;
    await delay(POLL_MS);
  }
  throw new Error(gone() ? 'redis-server exited' : `redis-server did not answer PING within ${READY_TIMEOUT_MS} ms`);
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString('utf8').startsWith('+PONG')));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await withTimeout(exited, STOP_TIMEOUT_MS, 'redis-server stop').catch(() => child.kill('SIGKILL'));
}
