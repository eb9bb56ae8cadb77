import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../test/support/redis-server';

/**
 * Runs `body` with the URL of a Redis server started for it in a scratch
 * folder, then stops the server and removes the folder. When no
 * redis-server starts, the section says so and is skipped.
 */
export async function withScratchRedis(body: (url: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'resilience4nest-bench-'));
  try {
    await chmod(root, 0o755);
    const server = await startRedis(root).catch((error: unknown) => error as Error);
    if (server instanceof Error) {
      console.log(`skipped: redis-server could not be started: ${server.message}`);
      return;
    }
    try {
      await body(server.url);
    } finally {
      await server.stop();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
