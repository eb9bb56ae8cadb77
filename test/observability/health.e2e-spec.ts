import { Controller, Get, INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import { ResilienceHealthIndicator, ResilienceModuleOptions, ResilienceRegistry, VirtualClock } from '../../lib';
import { FALLBACK_SHARE_NOT_CONFIGURED } from '../../lib/observability/observability.messages';
import { PLATFORMS } from '../support/platforms';
import { bootApp, Shop, SHOP_OPTIONS } from './kit';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly resilience: ResilienceHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.resilience.check()]);
  }

  @Get('fallbacks')
  @HealthCheck()
  fallbacks() {
    return this.health.check([() => this.resilience.checkFallbacks()]);
  }
}

const HEALTH_OPTIONS: ResilienceModuleOptions = {
  metrics: false,
  circuitBreaker: {
    instances: {
      // May turn the service down when it opens.
      psp: {
        ...SHOP_OPTIONS.circuitBreaker!.instances!.psp,
        registerHealthIndicator: true,
        allowHealthIndicatorToFail: true,
      },
      // Reported, but an open breaker only says CIRCUIT_OPEN.
      search: { registerHealthIndicator: true },
      hidden: {},
    },
  },
  health: { fallbackShare: { threshold: 50, window: '1m', minimumNumberOfCalls: 2 } },
};

async function openPsp(clock: VirtualClock, shop: Shop): Promise<void> {
  const ok = shop.charge(0, false);
  await clock.advance(0);
  await ok;
  const failed = shop.charge(0, true).catch(() => undefined);
  await clock.advance(0);
  await failed;
}

describe.each(PLATFORMS)('ResilienceHealthIndicator through terminus /health (%s)', (platform) => {
  let app: INestApplication;
  let clock: VirtualClock;
  let shop: Shop;
  let registry: ResilienceRegistry;

  beforeEach(async () => {
    ({ app, clock, shop } = await bootApp(
      HEALTH_OPTIONS,
      { imports: [TerminusModule.forRoot({ logger: false })], controllers: [HealthController] },
      platform,
    ));
    registry = app.get(ResilienceRegistry);
  });

  afterEach(() => app.close());

  const health = (path = '/health') => request(app.getHttpServer()).get(path);

  it('is 200 and up with every breaker CLOSED; reports only breakers with registerHealthIndicator', async () => {
    const { body } = await health().expect(200);
    expect(body.status).toBe('ok');
    expect(body.info.circuitBreakers.status).toBe('up');
    expect(Object.keys(body.info.circuitBreakers.instances).sort()).toEqual(['psp', 'search']);
    expect(body.info.circuitBreakers.instances.psp).toEqual({
      status: 'UP',
      state: 'CLOSED',
      failureRate: -1,
      slowCallRate: -1,
      failureRateThreshold: 50,
      slowCallRateThreshold: 100,
      bufferedCalls: 0,
      failedCalls: 0,
      slowCalls: 0,
      slowFailedCalls: 0,
      notPermittedCalls: 0,
    });
  });

  it('is 503 and down when a breaker with allowHealthIndicatorToFail is OPEN', async () => {
    await openPsp(clock, shop);
    await shop.quote();
    const { body } = await health().expect(503);
    expect(body.status).toBe('error');
    expect(body.error.circuitBreakers.status).toBe('down');
    expect(body.error.circuitBreakers.instances.psp).toMatchObject({
      status: 'DOWN',
      state: 'OPEN',
      failureRate: 50,
      bufferedCalls: 2,
      failedCalls: 1,
      notPermittedCalls: 1,
    });
    expect(body.error.circuitBreakers.instances.search.status).toBe('UP');
  });

  it('is 200 with CIRCUIT_OPEN when the open breaker may not fail the check', async () => {
    registry.circuitBreaker('search').transitionToOpenState();
    const { body } = await health().expect(200);
    expect(body.info.circuitBreakers.status).toBe('up');
    expect(body.info.circuitBreakers.instances.search).toMatchObject({ status: 'CIRCUIT_OPEN', state: 'OPEN' });
  });

  it('is 200 with CIRCUIT_HALF_OPEN while trial calls run, even where the breaker may fail the check', async () => {
    await openPsp(clock, shop);
    await clock.advance(60_001);
    await expect(shop.quote()).resolves.toBe('live');
    const { body } = await health().expect(200);
    expect(body.info.circuitBreakers.instances.psp).toMatchObject({ status: 'CIRCUIT_HALF_OPEN', state: 'HALF_OPEN' });
  });

  it.each([
    ['FORCED_OPEN', (r: ResilienceRegistry) => r.circuitBreaker('psp').transitionToForcedOpenState()],
    ['DISABLED', (r: ResilienceRegistry) => r.circuitBreaker('psp').transitionToDisabledState()],
    ['METRICS_ONLY', (r: ResilienceRegistry) => r.circuitBreaker('psp').transitionToMetricsOnlyState()],
  ])('reports %s as UNKNOWN and stays up', async (state, move) => {
    move(registry);
    const { body } = await health().expect(200);
    expect(body.info.circuitBreakers.instances.psp).toMatchObject({ status: 'UNKNOWN', state });
  });

  it('checkFallbacks is down once the share of fallback answers in the window reaches the threshold, and up again after it', async () => {
    let { body } = await health('/health/fallbacks').expect(200);
    expect(body.info.fallbacks).toMatchObject({
      status: 'up',
      calls: 0,
      fallbacks: 0,
      share: 0,
      threshold: 50,
      windowMs: 60_000,
    });

    await shop.quote();
    await shop.quote();
    ({ body } = await health('/health/fallbacks').expect(200));
    expect(body.info.fallbacks).toMatchObject({ status: 'up', calls: 2, fallbacks: 0, share: 0 });

    await openPsp(clock, shop);
    await expect(shop.quote()).resolves.toBe('cached');
    ({ body } = await health('/health/fallbacks').expect(200));
    expect(body.info.fallbacks).toMatchObject({ calls: 3, fallbacks: 1 });

    await expect(shop.quote()).resolves.toBe('cached');
    ({ body } = await health('/health/fallbacks').expect(503));
    expect(body.error.fallbacks).toMatchObject({ status: 'down', calls: 4, fallbacks: 2, share: 50 });
    expect(body.error.fallbacks.methods).toEqual({
      'Shop.quote': { calls: 4, fallbacks: 2, share: 50 },
      // The cache has no fallback around it: its stale answers get a row of their own.
      rates: { calls: 0, fallbacks: 0, share: 0 },
    });

    await clock.advance(60_000);
    ({ body } = await health('/health/fallbacks').expect(200));
    expect(body.info.fallbacks).toMatchObject({ status: 'up', calls: 0, fallbacks: 0 });
  });
});

describe('ResilienceHealthIndicator without health.fallbackShare', () => {
  it('checkFallbacks names the option it needs', async () => {
    const { app } = await bootApp({ metrics: false });
    expect(() => app.get(ResilienceHealthIndicator).checkFallbacks()).toThrow(FALLBACK_SHARE_NOT_CONFIGURED);
    await app.close();
  });
});

describe.each(PLATFORMS)('ResilienceHealthIndicator and the breakers of keys (%s)', (platform) => {
  let app: INestApplication;
  let registry: ResilienceRegistry;

  beforeEach(async () => {
    ({ app } = await bootApp(
      {
        metrics: false,
        circuitBreaker: {
          instances: {
            // A breaker per host; one host open must not take the service down.
            hosts: { registerHealthIndicator: true },
            // A breaker per tenant whose operators asked for the service to go down with any of them.
            tenants: { registerHealthIndicator: true, allowHealthIndicatorToFail: true },
          },
        },
      },
      { imports: [TerminusModule.forRoot({ logger: false })], controllers: [HealthController] },
      platform,
    ));
    registry = app.get(ResilienceRegistry);
  });

  afterEach(() => app.close());

  const health = () => request(app.getHttpServer()).get('/health');

  it('counts the keys of a name in each status, naming none of them, and stays up while an open key may not fail the check', async () => {
    registry.circuitBreaker('hosts', { key: 'a.example' });
    registry.circuitBreaker('hosts', { key: 'b.example' }).transitionToOpenState();
    registry.circuitBreaker('hosts', { key: 'c.example' }).transitionToForcedOpenState();
    const { body } = await health().expect(200);
    const hosts = body.info.circuitBreakers.instances.hosts;
    expect(hosts.status).toBe('UP');
    expect(hosts.keys).toEqual({ kept: 3, statuses: { UP: 1, CIRCUIT_OPEN: 1, UNKNOWN: 1 } });
    expect(JSON.stringify(body)).not.toContain('example');
    // A name without keys has no such entry.
    expect(body.info.circuitBreakers.instances.tenants).not.toHaveProperty('keys');
  });

  it('is 503 and down while a key of a breaker with allowHealthIndicatorToFail is OPEN, and up once it closes', async () => {
    const acme = registry.circuitBreaker('tenants', { key: 'acme' });
    registry.circuitBreaker('tenants', { key: 'globex' });
    acme.transitionToOpenState();
    const down = await health().expect(503);
    expect(down.body.error.circuitBreakers.status).toBe('down');
    expect(down.body.error.circuitBreakers.instances.tenants).toMatchObject({
      status: 'UP',
      keys: { kept: 2, statuses: { UP: 1, DOWN: 1 } },
    });
    acme.transitionToClosedState();
    const up = await health().expect(200);
    expect(up.body.info.circuitBreakers.instances.tenants.keys).toEqual({ kept: 2, statuses: { UP: 2 } });
  });
});
