/**
 * Worker for the overhead section, run in its own process: times a bare
 * awaited call and opossum before any decorated call ran, then again after
 * 100,000 calls of the full decorated stack made outside any request
 * deadline, and prints both as JSON on stdout. A pipeline that entered an
 * AsyncLocalStorage context would leave every later promise dearer (Node 20
 * hooks them for good once one runs); the two figures say whether ours does.
 */
import { measure, Measurement } from './measure';
import { peers, PEER_LABELS } from './peers';
import { bootNest } from './subjects';

/** Decorated calls made between the two measurements. */
export const DECORATED_CALLS = 100_000;

class PlainService {
  async bare(x: number): Promise<number> {
    return x + 1;
  }
}

async function main(): Promise<void> {
  const plain = new PlainService();
  const bare = (): Promise<number> => plain.bare(1);
  const set = peers(bare);
  const opossum = set.candidates.find((c) => c.label === PEER_LABELS.opossum)!;
  const pick = [{ label: 'bare async method', call: bare, expect: 2 }, opossum];
  const { app, service } = await bootNest();
  try {
    const before = await measure(pick);
    for (let i = 0; i < DECORATED_CALLS; i++) await service.fullStack(1);
    const after = await measure(pick);
    set.verifyHappyPath();
    const result: { before: Measurement[]; after: Measurement[] } = { before, after };
    process.stdout.write(JSON.stringify(result));
  } finally {
    set.close();
    await app.close();
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
