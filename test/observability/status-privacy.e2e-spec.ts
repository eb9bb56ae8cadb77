import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { ResilienceEndpointsModule, ResilienceModule, Retry, VirtualClock } from '../../lib';

const SECRET_MESSAGE = 'charge failed for jane.doe@example.com with api key sk_live_51Hx9QeKs8';

class UpstreamError extends Error {
  readonly status = 502;
}

@Injectable()
class Payments {
  @Retry('payments', { maxAttempts: 2, waitDuration: 0 })
  async charge(): Promise<void> {
    throw new UpstreamError(SECRET_MESSAGE);
  }
}

async function boot(status: object): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({ clock: new VirtualClock(), metrics: false }),
      ResilienceEndpointsModule.forRoot({ status }),
    ],
    providers: [Payments],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  await app
    .get(Payments)
    .charge()
    .catch(() => undefined);
  return app;
}

describe('status event endpoints and request data', () => {
  it('serve the error class and status of an event, never its message', async () => {
    const app = await boot({ public: true });
    try {
      const response = await request(app.getHttpServer()).get('/actuator/retryevents').expect(200);
      expect(response.text).not.toContain('jane.doe@example.com');
      expect(response.text).not.toContain('sk_live');
      expect(response.body.retryEvents).toEqual([
        expect.objectContaining({ type: 'RETRY', errorClass: 'UpstreamError', errorStatus: 502 }),
        expect.objectContaining({ type: 'ERROR', errorClass: 'UpstreamError', errorStatus: 502 }),
      ]);
      for (const event of response.body.retryEvents) expect(event).not.toHaveProperty('errorMessage');
    } finally {
      await app.close();
    }
  });

  it('serve the message too when the app opts in with errorMessages: true', async () => {
    const app = await boot({ public: true, errorMessages: true });
    try {
      const { body } = await request(app.getHttpServer()).get('/actuator/retryevents').expect(200);
      expect(body.retryEvents[0]).toMatchObject({
        errorClass: 'UpstreamError',
        errorMessage: `UpstreamError: ${SECRET_MESSAGE}`,
      });
    } finally {
      await app.close();
    }
  });
});
