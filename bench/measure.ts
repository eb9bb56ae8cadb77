import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** One thing to time: `call()` is awaited once per iteration, one call at a time. */
export interface Candidate {
  readonly label: string;
  readonly call: () => Promise<unknown>;
  /** What one call must resolve to; checked once before timing, so a broken path is never timed. */
  readonly expect?: unknown;
}

/** The timing of one candidate over every round. */
export interface Measurement {
  readonly label: string;
  /** Median of the rounds' ns per call. */
  readonly nsPerCall: number;
  /** ns per call of each round, in round order. */
  readonly rounds: readonly number[];
  /** Calls per round. */
  readonly callsPerRound: number;
  /** (slowest round − fastest round) / median: how far to trust the median. */
  readonly spread: number;
}

/** How long to warm up and time each candidate. */
export interface MeasureOptions {
  /** Warm-up per candidate before calibrating, in ms (lets the JIT settle). */
  readonly warmupMs: number;
  /** Target length of one timed round of one candidate, in ms. */
  readonly roundMs: number;
  /** Timed rounds per candidate; the median is reported. */
  readonly rounds: number;
}

export const DEFAULT_MEASURE: MeasureOptions = { warmupMs: 400, roundMs: 250, rounds: 9 };

const gc = exposeGc();

/** Collects garbage fully (a few passes, so weak references and finalizers settle). */
export function collectGarbage(): void {
  for (let i = 0; i < 3; i++) gc();
}

/**
 * Times each candidate as sequential awaited calls. After a warm-up, each
 * candidate gets a fixed number of calls per round (calibrated to about
 * `roundMs`); rounds interleave the candidates (rotating who goes first),
 * so drift in machine load hits all of them alike. The heap is collected
 * before each round, so a round pays for its own garbage, not its predecessor's.
 */
export async function measure(
  candidates: readonly Candidate[],
  options: MeasureOptions = DEFAULT_MEASURE,
): Promise<Measurement[]> {
  const calls: number[] = [];
  for (const candidate of candidates) {
    await verify(candidate);
    const perCallNs = await warmUp(candidate.call, options.warmupMs);
    calls.push(Math.max(1000, Math.round((options.roundMs * 1e6) / perCallNs)));
  }
  const samples: number[][] = candidates.map(() => []);
  for (let round = 0; round < options.rounds; round++) {
    for (let k = 0; k < candidates.length; k++) {
      const i = (k + round) % candidates.length;
      collectGarbage();
      samples[i].push((await timeCalls(candidates[i].call, calls[i])) / calls[i]);
    }
  }
  return candidates.map((candidate, i) => {
    const sorted = [...samples[i]].sort((a, b) => a - b);
    const nsPerCall = median(sorted);
    return {
      label: candidate.label,
      nsPerCall,
      rounds: samples[i],
      callsPerRound: calls[i],
      spread: (sorted[sorted.length - 1] - sorted[0]) / nsPerCall,
    };
  });
}

/** Total ns taken by `n` sequential awaited calls. */
async function timeCalls(call: () => Promise<unknown>, n: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await call();
  return Number(process.hrtime.bigint() - start);
}

/** Calls for about `ms`; returns the ns per call seen in the second half (the JIT has mostly settled by then). */
async function warmUp(call: () => Promise<unknown>, ms: number): Promise<number> {
  const half = (ms * 1e6) / 2;
  let ns = 0;
  let n = 0;
  for (let pass = 0; pass < 2; pass++) {
    ns = 0;
    n = 0;
    let batch = 100;
    while (ns < half) {
      ns += await timeCalls(call, batch);
      n += batch;
      batch = Math.min(batch * 2, 100_000);
    }
  }
  return ns / n;
}

async function verify(candidate: Candidate): Promise<void> {
  const value = await candidate.call();
  if ('expect' in candidate && !Object.is(value, candidate.expect)) {
    throw new Error(
      `bench candidate "${candidate.label}" returned ${String(value)}, expected ${String(candidate.expect)}`,
    );
  }
}

/**
 * Runs `script` (a bench worker that prints `Measurement[]` as JSON) in a
 * new node process with the bench's flags, and returns its measurements.
 * For figures that must not be coloured by what this process has done
 * (e.g. AsyncLocalStorage, once run, slows every promise after it).
 * `scriptArgs` are passed on to the worker.
 */
export function measureInFreshProcess<T = Measurement[]>(
  script: string,
  scriptArgs: readonly string[] = [],
): Promise<T> {
  const args = ['--expose-gc', '-r', 'ts-node/register/transpile-only', resolve(__dirname, script), ...scriptArgs];
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      args,
      { cwd: resolve(__dirname, '..'), maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error) return fail(new Error(`${script} failed: ${error.message}\n${stderr}`));
        try {
          done(JSON.parse(stdout) as T);
        } catch {
          fail(new Error(`${script} printed no measurements:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

function median(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The global `gc()`; if node ran without --expose-gc, the flag is set now and `gc` taken from a fresh context. */
function exposeGc(): () => void {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing !== undefined) return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
