import { AxiosError } from 'axios';
import Redis from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { App } from 'supertest/types';
import { FaultInjector, FaultSpec, RedisCacheStore, ResilienceModuleOptions } from 'resilience4nest';
import { RunningServer } from '../../test/support/postgres-server';
import { startRedis } from '../../test/support/redis-server';
import { loadResilienceYaml } from '../src/config/load-config';
import { ratesCache } from '../src/rates/exchange-rates.client';
import { bootSampleApp, BootedSampleApp } from '../test/boot';

/** One phase of a game day: faults switched on (or none), then a wave of product page requests. */
interface Phase {
  readonly name: string;
  /** Faults per instance name, replacing the previous phase's. */
  readonly faults: Readonly<Record<string, FaultSpec>>;
  /** Virtual time passed before the wave (e.g. to let the last known rate grow too old). */
  readonly waitMs?: number;
  /** Stops the rates cache's Redis before the wave (the scenario's `ratesStore` must be `'redis'`). */
  readonly storeDown?: boolean;
  readonly requests: number;
}

/** A scenario of the design notes, run against the sample shop. */
export interface Scenario {
  readonly name: string;
  readonly summary: string;
  /** Whether a healthy wave warms the shop's caches before the faults (false: a cold start). */
  readonly warm: boolean;
  /** Where the rates cache keeps the last known rates: process memory (the shop's default), or a Redis of its own. */
  readonly ratesStore?: 'memory' | 'redis';
  readonly phases: readonly Phase[];
}

/** A refused connection, as each client reports it: fetch throws a TypeError, axios an AxiosError. */
const FETCH_DOWN: FaultSpec = { error: { rate: 1, error: TypeError } };
const AXIOS_DOWN: FaultSpec = { error: { rate: 1, error: AxiosError } };
/** Past the shop's `shop.rates.max-staleness` (10 min): the last known rate may no longer be quoted. */
const CACHE_TOO_OLD_MS = 11 * 60_000;

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'dependency-down',
    summary: 'the exchange-rate API refuses every connection',
    warm: true,
    phases: [{ name: 'rates down', faults: { rates: FETCH_DOWN }, requests: 30 }],
  },
  {
    name: 'dependency-and-cache-down',
    summary: 'the exchange-rate API and the Redis its rates cache is kept in go down together',
    warm: true,
    ratesStore: 'redis',
    phases: [
      { name: 'rates down', faults: { rates: FETCH_DOWN }, requests: 10 },
      { name: 'rates and cache store down', faults: { rates: FETCH_DOWN }, storeDown: true, requests: 30 },
    ],
  },
  {
    name: 'cache-too-old',
    summary: 'the exchange-rate API stays down past the shelf life of the last known rate',
    warm: true,
    phases: [
      { name: 'rates down', faults: { rates: FETCH_DOWN }, requests: 10 },
      { name: 'last rate too old', faults: { rates: FETCH_DOWN }, waitMs: CACHE_TOO_OLD_MS, requests: 30 },
    ],
  },
  {
    name: 'cache-empty',
    summary: 'a cold start: the exchange-rate API is down before any rate was cached',
    warm: false,
    phases: [{ name: 'cold, rates down', faults: { rates: FETCH_DOWN }, requests: 30 }],
  },
  {
    name: 'many-at-once',
    summary: 'rates, inventory and recommendations all fail at once: each part degrades, the page still answers',
    warm: true,
    phases: [
      { name: 'rates down', faults: { rates: FETCH_DOWN }, requests: 10 },
      {
        name: 'rates, inventory, recommendations down',
        faults: { rates: FETCH_DOWN, inventory: AXIOS_DOWN, recommendations: FETCH_DOWN },
        requests: 30,
      },
    ],
  },
];

/** What the users and the alerting saw in one phase. */
export interface PhaseRow {
  readonly phase: string;
  readonly requests: number;
  /** Full pages: fresh price, stock and recommendations. */
  readonly full: number;
  /** Answered with a price from the last known rate (`fresh: false`). */
  readonly stalePrice: number;
  /** Answered with stock `unknown` or without recommendations. */
  readonly degradedParts: number;
  /** Honest errors (5xx) instead of a guessed price. */
  readonly errors: number;
  /** `/health` status code after the wave. */
  readonly health: number;
  /** The fallback-share check's status after the wave (`up` or `down`). */
  readonly fallbackCheck: string;
  /** Fallback share over the check's window, in percent. */
  readonly fallbackShare: number;
  /** Fallback answers counted on `resilience4nest_fallback_calls_total` during the wave. */
  readonly fallbackAnswers: number;
  /** Last known rates the rates cache answered with, counted on `resilience4nest_cache_calls_total{result="stale"}`. */
  readonly staleAnswers: number;
  /** Faults counted on `resilience4nest_injected_faults_total` during the wave. */
  readonly injectedFaults: number;
  /** `resilience4j_circuitbreaker_state{name="rates"}` after the wave. */
  readonly ratesBreaker: string;
}

/** Sums every sample of `metric` in a Prometheus text page (optionally only those whose labels contain `labels`). */
function metricSum(page: string, metric: string, labels = ''): number {
  let sum = 0;
  for (const line of page.split('\n')) {
    if (!line.startsWith(`${metric}{`) || !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

function breakerState(page: string, name: string): string {
  for (const line of page.split('\n'))
    if (line.startsWith(`resilience4j_circuitbreaker_state{name="${name}"`) && line.endsWith(' 1'))
      return /state="([a-z_]+)"/.exec(line)![1];
  return 'none';
}

interface Signals {
  readonly metrics: string;
  readonly health: request.Response;
}

async function signals(booted: BootedSampleApp): Promise<Signals> {
  const server = booted.app.getHttpServer() as App;
  return {
    metrics: (await request(server).get('/metrics')).text,
    health: await request(server).get('/health'),
  };
}

/** Sends `count` product page requests (EUR prices, so every part is used) and classifies the answers. */
async function wave(booted: BootedSampleApp, count: number) {
  const server = booted.app.getHttpServer() as App;
  const answers = await booted.driver.answerAll(
    Array.from({ length: count }, () => request(server).get('/products/sku-1?currency=EUR')),
  );
  let full = 0;
  let stalePrice = 0;
  let degradedParts = 0;
  let errors = 0;
  for (const { status, body } of answers) {
    if (status >= 500) {
      errors++;
      continue;
    }
    const page = body as { available: unknown; price: { fresh: boolean }; recommendations?: unknown };
    const stale = !page.price.fresh;
    const degraded = page.available === 'unknown' || page.recommendations === undefined;
    if (stale) stalePrice++;
    if (degraded) degradedParts++;
    if (!stale && !degraded) full++;
  }
  return { full, stalePrice, degradedParts, errors };
}

const RATES_STALE = 'name="rates",result="stale"';

/** A Redis of the game day's own for the rates cache, and the shop's cache options that keep the rates in it. */
async function ratesRedis(): Promise<{
  options: ResilienceModuleOptions;
  server: RunningServer;
  close(): Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), 'gameday-rates-cache-'));
  const server = await startRedis(root);
  const client = new Redis(server.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 100,
  });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('ready', resolve));
  const yaml = loadResilienceYaml() as { shop?: { rates?: Record<string, string> } };
  const maxStaleness = yaml.shop?.rates?.['max-staleness'] ?? '10m';
  return {
    options: {
      cache: {
        instances: {
          rates: { ...ratesCache(maxStaleness), store: new RedisCacheStore({ client }) },
          recommendations: { coalesce: true },
        },
      },
    },
    server,
    close: async () => {
      client.disconnect();
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Runs one scenario against the sample shop booted in this process (its
 * real loopback dependencies, its YAML settings, fault injection on) and
 * answers a row per phase: a healthy baseline first (for a warm scenario),
 * then each phase's faults and wave. `progress` gets one line per phase.
 */
export async function runGameDay(
  scenario: Scenario,
  progress: (line: string) => void = () => undefined,
): Promise<PhaseRow[]> {
  const redis = scenario.ratesStore === 'redis' ? await ratesRedis() : undefined;
  const booted = await bootSampleApp(false, 'express', undefined, undefined, {
    faultInjection: { enabled: true },
    ...redis?.options,
  });
  const faults = booted.app.get(FaultInjector);
  const rows: PhaseRow[] = [];
  const phases: Phase[] = [
    ...(scenario.warm ? [{ name: 'baseline', faults: {}, requests: 10 }] : []),
    ...scenario.phases,
  ];
  try {
    for (const phase of phases) {
      progress(`${scenario.name}: ${phase.name} (${phase.requests} requests)`);
      faults.clear();
      for (const [name, fault] of Object.entries(phase.faults)) faults.inject(name, fault);
      if (phase.waitMs !== undefined) await booted.clock.advance(phase.waitMs);
      if (phase.storeDown === true) await redis!.server.stop();
      const before = await signals(booted);
      const seen = await wave(booted, phase.requests);
      const after = await signals(booted);
      const check = after.health.body as {
        info?: Record<string, { status: string; share?: number }>;
        error?: Record<string, { status: string; share?: number }>;
      };
      const fallbacks = { ...check.info, ...check.error }.fallbacks;
      rows.push({
        phase: phase.name,
        requests: phase.requests,
        ...seen,
        health: after.health.status,
        fallbackCheck: fallbacks?.status ?? 'absent',
        fallbackShare: Math.round(fallbacks?.share ?? 0),
        fallbackAnswers:
          metricSum(after.metrics, 'resilience4nest_fallback_calls_total') -
          metricSum(before.metrics, 'resilience4nest_fallback_calls_total'),
        staleAnswers:
          metricSum(after.metrics, 'resilience4nest_cache_calls_total', RATES_STALE) -
          metricSum(before.metrics, 'resilience4nest_cache_calls_total', RATES_STALE),
        injectedFaults:
          metricSum(after.metrics, 'resilience4nest_injected_faults_total') -
          metricSum(before.metrics, 'resilience4nest_injected_faults_total'),
        ratesBreaker: breakerState(after.metrics, 'rates'),
      });
    }
  } finally {
    faults.clear();
    booted.driver.restore();
    await booted.app.close();
    await redis?.close();
  }
  return rows;
}
