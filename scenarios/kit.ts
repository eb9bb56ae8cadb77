import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ResilienceModule, ResilienceModuleOptions, VirtualClock } from '../lib';

/*
 * The shared simulation kit of the scenarios (and of test/scenarios): boot
 * the real module on a virtual clock, note how calls settle, a seeded
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
 * where jitter matters.
 */
export async function bootScenario(providers: unknown[], options: ResilienceModuleOptions = {}): Promise<Scenario> {
  const clock = new VirtualClock();
  const moduleRef = await NestFactory.createApplicationContext(
    {
      module: ScenarioModule,
      imports: [ResilienceModule.forRoot({ clock, random: () => 0, ...options })],
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

/** Starts `call` now and notes when and how it settles, without ever rejecting. */
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
  /** The table, with the note's reference figures beside ours. */
  readonly table: string;
  /** A standalone SVG document. */
  readonly svg: string;
}
