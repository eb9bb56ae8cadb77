import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigChangedEvent,
  fromSpringConfig,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  VirtualClock,
  watchSpringConfig,
} from '../../lib';
import { CONFIG_CHANGED } from '../../lib/observability/observability.messages';
import { RELOAD_FAILED, RELOAD_RECOVERED } from '../../lib/registry/reload.messages';

/** Boots the module with `options`; collects what it logs. */
async function boot(options: ResilienceModuleOptions) {
  const lines: Array<[string, string]> = [];
  jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void lines.push(['warn', String(m)]));
  jest.spyOn(Logger.prototype, 'log').mockImplementation((m: unknown) => void lines.push(['log', String(m)]));
  const app = await Test.createTestingModule({ imports: [ResilienceModule.forRoot(options)] }).compile();
  await app.init();
  lines.length = 0;
  return { app, registry: app.get(ResilienceRegistry), lines };
}

describe('ResilienceModule.forRoot({ reload })', () => {
  afterEach(() => jest.restoreAllMocks());

  it('reads the source every interval on the injected clock and applies what differs', async () => {
    const clock = new VirtualClock();
    let threshold: unknown = 50;
    let reads = 0;
    const { app, registry, lines } = await boot({
      clock,
      circuitBreaker: { instances: { psp: {} } },
      reload: {
        interval: '30s',
        source: async () => {
          reads++;
          return {
            circuitBreaker: { instances: { psp: { failureRateThreshold: threshold } } },
          } as ResilienceModuleOptions;
        },
      },
    });
    const breaker = registry.circuitBreaker('psp');

    await clock.advance(29_999);
    expect(reads).toBe(0);
    await clock.advance(1);
    expect(reads).toBe(1);
    expect(breaker.config.failureRateThreshold).toBe(50);
    expect(lines).toEqual([]);

    threshold = 25;
    await clock.advance(30_000);
    expect(reads).toBe(2);
    expect(breaker.config.failureRateThreshold).toBe(25);
    expect(lines).toHaveLength(1);
    expect(lines[0][1]).toMatch(/^circuitBreaker 'psp' reconfigured: failureRateThreshold 50 -> 25/);
    await app.close();
    await clock.advance(60_000);
    expect(reads).toBe(2);
  });

  it('changes nothing for a source that throws or gives invalid options, and logs each episode once', async () => {
    const clock = new VirtualClock();
    let answer: () => ResilienceModuleOptions = () => ({ retry: { instances: { inventory: { maxAttempts: 3 } } } });
    const { app, registry, lines } = await boot({
      clock,
      retry: { instances: { inventory: { maxAttempts: 3 } } },
      reload: { interval: '10s', source: () => answer() },
    });
    const retry = registry.retry('inventory');
    const changes: ConfigChangedEvent[] = [];
    retry.onConfigChanged((event) => changes.push(event));

    answer = () => {
      throw new Error('config server unreachable');
    };
    await clock.advance(10_000);
    await clock.advance(10_000);
    answer = () => ({ retry: { instances: { inventory: { maxAttempts: 0 } } } });
    await clock.advance(10_000);
    expect(retry.config.maxAttempts).toBe(3);
    expect(changes).toEqual([]);
    expect(lines).toEqual([['warn', RELOAD_FAILED('config server unreachable')]]);

    answer = () => ({ retry: { instances: { inventory: { maxAttempts: 5 } } } });
    await clock.advance(10_000);
    expect(retry.config.maxAttempts).toBe(5);
    expect(lines).toEqual([
      ['warn', RELOAD_FAILED('config server unreachable')],
      ['log', CONFIG_CHANGED(changes[0])],
      ['log', RELOAD_RECOVERED(3, 30_000)],
    ]);

    answer = () => ({ retry: { instances: { inventory: { maxAttempts: 'many' as unknown as number } } } });
    await clock.advance(10_000);
    expect(lines[3][0]).toBe('warn');
    expect(lines[3][1]).toContain("invalid configuration of retry instance 'inventory': key 'maxAttempts'");
    expect(retry.config.maxAttempts).toBe(5);
    await app.close();
  });

  it('refuses a reload without a source function, naming the key', async () => {
    await expect(
      Test.createTestingModule({
        imports: [ResilienceModule.forRoot({ reload: { interval: '10s' } as never })],
      }).compile(),
    ).rejects.toThrow("invalid configuration of module options 'reload': key 'source' must be a function");
  });
});

describe('watchSpringConfig', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'resilience4nest-watch-'))));
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  const yml = (threshold: number): string =>
    [
      'resilience4j:',
      '  circuitbreaker:',
      '    instances:',
      '      psp:',
      `        failure-rate-threshold: ${threshold}`,
    ].join('\n');

  it('re-reads the application.yml when it changes, and stops watching when the module is destroyed', async () => {
    const path = join(dir, 'application.yml');
    writeFileSync(path, yml(50));
    const reload = watchSpringConfig(path);
    let watching = 0;
    const { app, registry } = await boot({
      ...fromSpringConfig(readFileSync(path, 'utf8')),
      reload: {
        ...reload,
        watch: (changed) => {
          watching++;
          const stop = reload.watch!(changed);
          return () => {
            watching--;
            stop();
          };
        },
      },
    });
    const breaker = registry.circuitBreaker('psp');
    const changed = new Promise<ConfigChangedEvent>((resolve) => breaker.onConfigChanged(resolve));

    writeFileSync(path, yml(35));

    const event = await changed;
    expect(event.changed).toEqual(['failureRateThreshold']);
    expect(breaker.config.failureRateThreshold).toBe(35);
    expect(watching).toBe(1);
    await app.close();
    expect(watching).toBe(0);
  });
});
