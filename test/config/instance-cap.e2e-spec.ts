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
}

describe('the cap on instances made for names that are not declared', () => {
  it('refuses one more with a TooManyInstancesError naming the option, the policy and the name', () => {
    const registry = new ResilienceRegistry({ maxUndeclaredInstances: 1 });
    registry.circuitBreaker('first');
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

    it('answers the request beyond the cap with a problem naming the option, not a bare 500', async () => {
      for (const tenant of ['a', 'b', 'a']) await request(app.getHttpServer()).get(`/tenants/${tenant}`).expect(200);
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
      await request(app.getHttpServer()).get('/tenants/b').expect(200);
    });
  });
});
