import { ChildProcess, spawn, SpawnOptions } from 'node:child_process';
import { connect } from 'node:net';
import { delay, LogTail, withTimeout } from './wait';

const STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

/** A message broker a suite started. */
export interface RunningBroker {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** Stops it (and any helper process it needed), within a bounded time. */
  stop(): Promise<void>;
}

/** A child process started for a suite, with the tail of its output kept for error messages. */
export class ServerProcess {
  readonly child: ChildProcess;
  readonly log = new LogTail(40);
  private gone: string | undefined;
  private readonly group: boolean;

  /** With `options.detached`, the child leads its own process group, and `stop` signals the whole group. */
  constructor(bin: string, args: readonly string[], options: SpawnOptions, installHint: string) {
    this.group = options.detached === true;
    this.child = spawn(bin, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => this.log.push(chunk.toString('utf8')));
    this.child.stderr?.on('data', (chunk: Buffer) => this.log.push(chunk.toString('utf8')));
    this.child.once('error', (error: NodeJS.ErrnoException) => {
      this.gone = error.code === 'ENOENT' ? `${bin} not found on PATH (${installHint})` : error.message;
    });
    this.child.once('exit', (code, signal) => {
      this.gone ??= `${bin} exited (code ${code}, signal ${signal})`;
    });
  }

  /** Why the process is gone, or `undefined` while it runs. */
  get exited(): string | undefined {
    return this.gone;
  }

  /** Waits until a TCP connection to `port` succeeds, or fails with the process's output. */
  async waitForPort(port: number, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.gone !== undefined) throw new Error(this.log.explain(this.gone));
      if (await accepts(port)) return;
      await delay(POLL_MS);
    }
    throw new Error(this.log.explain(`${what} did not accept connections on port ${port} within ${timeoutMs} ms`));
  }

  /** SIGTERM, then SIGKILL if it does not exit in time. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const signal = (name: NodeJS.Signals) => {
      try {
        if (this.group) process.kill(-(child.pid as number), name);
        else child.kill(name);
      } catch {
        // Already gone.
      }
    };
    signal('SIGTERM');
    await withTimeout(exited, STOP_TIMEOUT_MS, 'broker stop').catch(() => signal('SIGKILL'));
    // Whatever the group's leader left behind goes too.
    if (this.group) signal('SIGKILL');
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}
