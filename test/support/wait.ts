import { createServer } from 'node:net';

/** Rejects with `what` timed out when `promise` takes longer than `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms` of real time (the harness waits on real servers, not on policy code). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Keeps the last `limit` lines written to it, to explain a failed start. */
export class LogTail {
  private readonly lines: string[] = [];

  constructor(private readonly limit = 20) {}

  /** Appends a chunk of output. */
  push(chunk: string): void {
    for (const line of chunk.split('\n')) {
      if (line.trim() === '') continue;
      this.lines.push(line.trimEnd());
      if (this.lines.length > this.limit) this.lines.shift();
    }
  }

  /** True when some kept line contains `text`. */
  includes(text: string): boolean {
    return this.lines.some((line) => line.includes(text));
  }

  /** `message`, followed by the kept lines when there are any. */
  explain(message: string): string {
    return this.lines.length > 0 ? `${message}\n${this.lines.join('\n')}` : message;
  }
}
