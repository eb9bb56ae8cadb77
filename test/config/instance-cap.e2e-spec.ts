import { Controller, Get, INestApplication, Param } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  RESILIENCE_PROBLEMS,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  TooManyInstancesError,
} from '../../lib';
import { TOO_MANY_UNDECLARED_INSTANCES } from '../../lib/kernel/resilience.messages';
import { createPlatformApp, initPlatformApp, mediaType, Platform, PLATFORMS } from '../support/platforms';

/** A route that makes one circuit breaker per tenant, the name taken from the request. */
@Controller('tenants')
class TenantController {
  constructor(private readonly registry: ResilienceRegistry) {}

  @Get(':tenant')
  state(@Param('tenant') tenant: string): { state: string } {
    return { state: this.registry.circuitBreaker(`tenant-${tenant}`).state };
  }

  @Get(':tenant/force-open')
  forceOpen(@Param('tenant') tenant: string): { state: string } {
    const breaker = this.registry.circuitBreaker(`tenant-${tenant}`);
    breaker.transitionToForcedOpenState();
    return { state: breaker.state };
  }
}

describe('the cap on instances made for names that are not declared', () => {
  it('evicts the least recently used idle name to make room', () => {
    const registry = new ResilienceRegistry({ maxUndeclaredInstances: 1 });
    const first = registry.circuitBreaker('first');
    expect(registry.circuitBreaker('second').name).toBe('second');
    expect(registry.all('circuitBreaker')).toHaveLength(1);
    expect(registry.circuitBreaker('first')).not.toBe(first);
  });

  it('refuses one more, when none can be evicted, with a TooManyInstancesError naming the option, the policy and the name', () => {
    const registry = new ResilienceRegistry({ maxUndeclaredInstances: 1 });
    registry.circuitBreaker('first').transitionToForcedOpenState();
    let refused: unknown;
    try {
      registry.circuitBreaker('second');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(TooManyInstancesError);
    expect(refused).toMatchObject({
      code: 'TOO_MANY_INSTANCES',
      instance: 'second',
      policy: 'circuitBreaker',
      max: 1,
      message: TOO_MANY_UNDECLARED_INSTANCES('circuitBreaker', 'second', 1),
    });
  });

  describe.each(PLATFORMS)('on %s, for a name taken from the request', (platform: Platform) => {
    let app: INestApplication;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [ResilienceModule.forRoot({ maxUndeclaredInstances: 2 })],
        controllers: [TenantController],
      }).compile();
      app = createPlatformApp(moduleRef, platform);
      app.useGlobalFilters(new ResilienceExceptionFilter());
      await initPlatformApp(app);
    });
    afterAll(() => app.close());

    it('answers the request beyond the cap, when no name can be evicted, with a problem naming the option, not a bare 500', async () => {
      for (const tenant of ['a', 'b', 'c']) await request(app.getHttpServer()).get(`/tenants/${tenant}`).expect(200);
      for (const tenant of ['b', 'a'])
        await request(app.getHttpServer()).get(`/tenants/${tenant}/force-open`).expect(200);
      const refused = await request(app.getHttpServer()).get('/tenants/c');
      const problem = RESILIENCE_PROBLEMS.TOO_MANY_INSTANCES;
      expect(refused.status).toBe(problem.status);
      expect(refused.status).not.toBe(500);
      expect(mediaType(refused.headers['content-type'])).toBe('application/problem+json');
      expect(refused.headers['retry-after']).toBeUndefined();
      expect(JSON.parse(refused.text)).toEqual({
        type: problem.type,
        title: problem.title,
        status: problem.status,
        detail: TOO_MANY_UNDECLARED_INSTANCES('circuitBreaker', 'tenant-c', 2),
        instance: '/tenants/c',
        name: 'tenant-c',
      });
      expect(JSON.parse(refused.text).detail).toContain("'maxUndeclaredInstances'");
      await request(app.getHttpServer()).get('/tenants/b').expect(200, { state: 'FORCED_OPEN' });
    });
  });
});
