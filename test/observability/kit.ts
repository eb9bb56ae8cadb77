import { INestApplication, Injectable, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Bulkhead,
  Cache,
  CallNotPermittedError,
  CircuitBreaker,
  Fallback,
  Idempotent,
  ResilienceModule,
  ResilienceModuleOptions,
  Retry,
  Timeout,
  VirtualClock,
} from '../../lib';
import { createPlatformApp, initPlatformApp, Platform } from '../support/platforms';

/** A dependency's answer that retries and breakers treat as an outage. */
export class Unavailable extends Error {
  readonly status = 503;
}

/** Resolves when a test opens it: holds a call inside the bulkhead. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;

  constructor() {
    this.promise = new Promise<void>((resolve) => (this.open = resolve));
  }
}

/** One method per policy, each driven into the case a test asserts on. */
@Injectable()
export class Shop {
  inventoryCalls = 0;
  rateCalls = 0;

  constructor(private readonly clock: VirtualClock) {}

  /** Takes `ms` of virtual time, then answers or fails. */
  @CircuitBreaker('psp')
  async charge(ms: number, fail: boolean): Promise<string> {
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
    if (fail) throw new Unavailable('psp down');
    return 'charged';
  }

  /** Behind the same breaker; a refusal is answered from the cache. */
  @Fallback(CallNotPermittedError, 'cachedQuote')
  @CircuitBreaker('psp')
  async quote(): Promise<string> {
    return 'live';
  }

  cachedQuote(_error: CallNotPermittedError): string {
    return 'cached';
  }

  /** Always fails with a retryable error. */
  @Retry('inventory')
  async reserve(): Promise<never> {
    this.inventoryCalls++;
    throw new Unavailable('inventory down');
  }

  /** Holds its bulkhead permit until `gate` opens. */
  @Bulkhead('pool')
  async work(gate: Promise<void>): Promise<string> {
    await gate;
    return 'done';
  }

  /** Takes a second of virtual time, past its 100 ms limit. */
  @Timeout('slow')
  async slow(): Promise<string> {
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 1000));
    return 'late';
  }

  /** A rate, kept for a minute: the second ask is answered from the cache. */
  @Cache('rates')
  async rate(currency: string): Promise<number> {
    this.rateCalls++;
    return currency === 'EUR' ? 1 : 1.1;
  }

  /** Runs once per order id; a repeated id gets the stored answer. */
  @Idempotent({ key: (id: string) => id })
  async order(id: string): Promise<string> {
    return `order ${id}`;
  }
}

/** The instances `Shop` uses, each sized so a few calls reach the case under test. */
export const SHOP_OPTIONS: ResilienceModuleOptions = {
  circuitBreaker: {
    instances: {
      psp: { slidingWindowSize: 2, minimumNumberOfCalls: 2, failureRateThreshold: 50, waitDurationInOpenState: '60s' },
    },
  },
  // One token to start with (half of 2): the first retry spends it, the second is denied.
  retry: { instances: { inventory: { maxAttempts: 3, waitDuration: 0, budget: { ratio: 0.1, maxTokens: 2 } } } },
  bulkhead: { instances: { pool: { maxConcurrentCalls: 1 } } },
  timeLimiter: { instances: { slow: { timeoutDuration: '100ms' } } },
  cache: { instances: { rates: { ttl: '1m' } } },
};

/** Boots an HTTP app with `Shop` on a virtual clock, on `platform` (Express by default). */
export async function bootApp(
  options: ResilienceModuleOptions,
  metadata: ModuleMetadata = {},
  platform: Platform = 'express',
): Promise<{ app: INestApplication; clock: VirtualClock; shop: Shop }> {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({
    ...metadata,
    imports: [
      ResilienceModule.forRoot({ ...SHOP_OPTIONS, clock, random: () => 0, ...options }),
      ...(metadata.imports ?? []),
    ],
    providers: [{ provide: VirtualClock, useValue: clock }, Shop, ...(metadata.providers ?? [])],
  }).compile();
  const app = await initPlatformApp(createPlatformApp(moduleRef, platform));
  return { app, clock, shop: app.get(Shop) };
}

/**
 * Drives each policy into the case the metrics must show: a success of
 * 20 ms and a failure of 30 ms open the breaker, a refused quote is answered
 * by its fallback, a retry budget denies the second retry, a bulkhead of one
 * rejects a second caller, a call runs past its time limit, and an order is
 * executed once and replayed once, and a rate is asked twice and called once.
 */
export async function driveTraffic(clock: VirtualClock, shop: Shop): Promise<void> {
  const charged = shop.charge(20, false);
  await clock.advance(20);
  await expect(charged).resolves.toBe('charged');
  const failed = shop.charge(30, true).catch((e: unknown) => e);
  await clock.advance(30);
  expect(await failed).toBeInstanceOf(Unavailable);
  await expect(shop.quote()).resolves.toBe('cached');

  await expect(shop.reserve()).rejects.toBeInstanceOf(Unavailable);
  expect(shop.inventoryCalls).toBe(2);

  const gate = new Gate();
  const held = shop.work(gate.promise);
  await expect(shop.work(Promise.resolve())).rejects.toMatchObject({ instance: 'pool', reason: 'queue-full' });
  gate.open();
  await expect(held).resolves.toBe('done');

  const slow = shop.slow().catch((e: unknown) => e);
  await clock.advance(100);
  expect(await slow).toMatchObject({ instance: 'slow', code: 'TIMEOUT_EXCEEDED' });
  // Lets the abandoned second-long call finish, so no timer is left behind.
  await clock.advance(900);

  await expect(shop.order('o-1')).resolves.toBe('order o-1');
  await expect(shop.order('o-1')).resolves.toBe('order o-1');

  await expect(shop.rate('USD')).resolves.toBe(1.1);
  await expect(shop.rate('USD')).resolves.toBe(1.1);
  expect(shop.rateCalls).toBe(1);
}

/** One sample line of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the sample lines of a Prometheus text exposition (comments skipped). */
export function parseScrape(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` with exactly `labels`; throws when there is none or several. */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string>): number {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = samples.filter((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted);
  if (found.length !== 1) throw new Error(`${found.length} samples ${name}${JSON.stringify(labels)}`);
  return found[0].value;
}

/** The names of every resilience series (sample names, suffixes included) in `samples`. */
export function resilienceNames(samples: readonly Sample[]): Set<string> {
  return new Set(samples.map((s) => s.name).filter((n) => /^resilience4(j|nest)_/.test(n)));
}
