import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { ConsoleLogger, INestApplication } from '@nestjs/common';
import * as resilience from 'resilience4nest';
import { ResilienceRegistry } from 'resilience4nest';
import { createApp } from '../src/create-app.js';
import { Supplier } from '../src/supplier.js';

/** Keeps what the application logged at warn and error level, to check that nothing ran unprotected. */
class KeptLogger extends ConsoleLogger {
  readonly kept: string[] = [];
  override log(): void {}
  override warn(message: unknown): void {
    this.kept.push(String(message));
  }
  override error(message: unknown): void {
    this.kept.push(String(message));
  }
}

describe('resilience4nest in an ES module NestJS 12 application', () => {
  const logger = new KeptLogger();
  let app: INestApplication;
  let supplier: Supplier;
  let base: string;

  const get = (path: string): Promise<Response> => fetch(`${base}${path}`);

  beforeAll(async () => {
    app = await createApp(logger);
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    supplier = app.get(Supplier);
  });

  afterAll(async () => {
    await app?.close();
  });

  beforeEach(() => {
    supplier.calls = 0;
  });

  it('imports every export of the package by name, from the one copy that require() loads too', () => {
    const required = createRequire(import.meta.url)('resilience4nest') as Record<string, unknown>;
    expect(Object.keys(required).length).toBeGreaterThan(50);
    expect(Object.keys(required).filter((name) => !(name in resilience))).toEqual([]);
    expect(resilience.ResilienceModule).toBe(required.ResilienceModule);
  });

  it('@Retry retries a 503 until the supplier answers', async () => {
    supplier.next('unavailable', 'unavailable');
    const response = await get('/prices/retried/sku-1');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ sku: 'sku-1', price: 42 });
    expect(supplier.calls).toBe(3);
    expect(app.get(ResilienceRegistry).retry('supplier').metrics.successfulCallsWithRetry).toBe(1);
  });

  it('@Timeout gives up on a hung call: 504 problem+json through the exception filter', async () => {
    supplier.next('hang');
    const response = await get('/prices/timed/sku-1');
    expect(response.status).toBe(504);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(await response.json()).toMatchObject({ status: 504, type: expect.stringContaining('timeout-exceeded') });
  });

  it('@Bulkhead refuses a second concurrent call with 503 and Retry-After', async () => {
    supplier.next('hold');
    const first = get('/prices/bounded/sku-1');
    await vi.waitFor(() => expect(supplier.holding).toBe(1), { timeout: 5000 });
    const second = await get('/prices/bounded/sku-2');
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).not.toBeNull();
    expect(await second.json()).toMatchObject({ status: 503, type: expect.stringContaining('bulkhead-full') });
    supplier.release();
    expect((await first).status).toBe(200);
    expect(supplier.calls).toBe(1);
  });

  it('@Fallback answers for the failed supplier', async () => {
    supplier.next('broken');
    const response = await get('/prices/withFallback/sku-1');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ sku: 'sku-1', price: 'unknown' });
  });

  it('@CircuitBreaker opens after two failures and then refuses without calling the supplier', async () => {
    expect((await get('/health')).status).toBe(200);
    supplier.next('broken', 'broken');
    expect((await get('/prices/guarded/sku-1')).status).toBe(500);
    expect((await get('/prices/guarded/sku-1')).status).toBe(500);
    const refused = await get('/prices/guarded/sku-1');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refused.json()).toMatchObject({ status: 503, type: expect.stringContaining('call-not-permitted') });
    expect(supplier.calls).toBe(2);
    expect(app.get(ResilienceRegistry).circuitBreaker('supplier').state).toBe('OPEN');
    const health = await get('/health');
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({
      error: { circuitBreakers: { instances: { supplier: { status: 'DOWN', state: 'OPEN' } } } },
    });
  });

  it('@Idempotent runs a keyed order once and replays it', async () => {
    const order = (): Promise<Response> =>
      fetch(`${base}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'order-1' },
        body: JSON.stringify({ sku: 'sku-1' }),
      });
    const first = await order();
    const replay = await order();
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({ order: 1, sku: 'sku-1' });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual({ order: 1, sku: 'sku-1' });
  });

  it('wired every decorated method: nothing was reported as unprotected', () => {
    expect(logger.kept.length).toBeGreaterThan(0);
    expect(logger.kept.filter((message) => /unprotected|another copy/.test(message))).toEqual([]);
  });
});
