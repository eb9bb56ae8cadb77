/**
 * Worker for the overhead section, run in its own process: times the bare
 * method and the peers where no AsyncLocalStorage has ever run, i.e. the
 * process a cockatiel or opossum user has. It imports neither `../lib` nor
 * Nest, and prints its measurements as JSON on stdout.
 */
import { measure } from './measure';
import { peers } from './peers';

export const FRESH_BARE_LABEL = 'bare async method';

/** The same body as BenchService.bare, on a plain class. */
class PlainService {
  async bare(x: number): Promise<number> {
    return x + 1;
  }
}

async function main(): Promise<void> {
  const service = new PlainService();
  const bare = (): Promise<number> => service.bare(1);
  const set = peers(bare);
  try {
    const results = await measure([{ label: FRESH_BARE_LABEL, call: bare, expect: 2 }, ...set.candidates]);
    set.verifyHappyPath();
    process.stdout.write(JSON.stringify(results));
  } finally {
    set.close();
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
