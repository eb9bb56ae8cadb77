import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ResilienceModule, ResilienceModuleOptions, VirtualClock } from '../lib';

/*
 * The shared simulation kit of the scenarios (and of test/scenarios): boot
 * the real module on a virtual clock, record how calls settle, a seeded
 * random source, and plain-text tables.
 */

/** A booted application context whose policies and providers share one virtual clock. */
export interface Scenario {
  readonly moduleRef: INestApplicationContext;
  readonly clock: VirtualClock;
}

@Module({})
class ScenarioModule {}

/**
 * Boots `ResilienceModule.forRoot` on a fresh {@link VirtualClock} (also
 * provided as `VirtualClock`, so simulated dependencies wait on it) with the
 * given providers. `random` defaults to `() => 0`; pass {@link mulberry32}
 * where jitter matters. Options that need the clock (a store) may be given
 * as a function of it.
 */
export async function bootScenario(
  providers: unknown[],
  options: ResilienceModuleOptions | ((clock: VirtualClock) => ResilienceModuleOptions) = {},
): Promise<Scenario> {
  const clock = new VirtualClock();
  const resolved = typeof options === 'function' ? options(clock) : options;
  const moduleRef = await NestFactory.createApplicationContext(
    {
      module: ScenarioModule,
      imports: [ResilienceModule.forRoot({ clock, random: () => 0, ...resolved })],
      providers: [{ provide: VirtualClock, useValue: clock }, ...(providers as never[])],
    },
    { logger: false, abortOnError: false },
  );
  return { moduleRef, clock };
}

/** How one call ended, read on the virtual clock. */
export interface Settled {
  readonly startedAt: number;
  settledAt?: number;
  value?: unknown;
  error?: unknown;
}

/** Starts `call` now and records when and how it settles, without ever rejecting. */
export function track(clock: VirtualClock, call: () => Promise<unknown>): Settled {
  const record: Settled = { startedAt: clock.now() };
  call().then(
    (value) => {
      record.settledAt = clock.now();
      record.value = value;
    },
    (error: unknown) => {
      record.settledAt = clock.now();
      record.error = error;
    },
  );
  return record;
}

/**
 * A seeded uniform [0, 1) source (mulberry32), so every run of a scenario
 * draws the same numbers; pass it as the module's `random`.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The `p`-th percentile (0–100, nearest rank) of `values`; `NaN` when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Lays out rows as text columns: the first column left-aligned, the others right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `1234567` → `1,234,567`. */
export function grouped(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** What every scenario hands the CLI: its printed table and its chart. */
export interface ScenarioReport {
  /** The table, with the reference model's figures beside ours. */
  readonly table: string;
  /** A standalone SVG document. */
  readonly svg: string;
}

/**
 * Python's `random.random()` after `random.seed(seed)` (MT19937 seeded by
 * `init_by_array`, 53-bit floats), for a non-negative integer seed below
 * 2^32: a reference model written in Python that seeds its generator can
 * then be replayed draw for draw.
 */
export function pythonRandom(seed: number): () => number {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw new RangeError(`pythonRandom: seed must be an integer in [0, 2^32), got ${seed}`);
  const N = 624;
  const M = 397;
  const mt = new Uint32Array(N);
  mt[0] = 19650218;
  for (let i = 1; i < N; i++) mt[i] = Math.imul(1812433253, mt[i - 1] ^ (mt[i - 1] >>> 30)) + i;
  // init_by_array([seed])
  let i = 1;
  for (let k = N; k > 0; k--) {
    mt[i] = (mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1664525)) + seed;
    if (++i >= N) {
      mt[0] = mt[N - 1];
      i = 1;
    }
  }
  for (let k = N - 1; k > 0; k--) {
    mt[i] = (mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1566083941)) - i;
    if (++i >= N) {
      mt[0] = mt[N - 1];
      i = 1;
    }
  }
  mt[0] = 0x80000000;
  let index = N;
  const next = (): number => {
    if (index >= N) {
      for (let k = 0; k < N; k++) {
        const y = (mt[k] & 0x80000000) | (mt[(k + 1) % N] & 0x7fffffff);
        mt[k] = mt[(k + M) % N] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      index = 0;
    }
    let y = mt[index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  };
  return () => ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
}
