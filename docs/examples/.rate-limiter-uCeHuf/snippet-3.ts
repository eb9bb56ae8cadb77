import { Module } from '@nestjs/common';
import Redis from 'ioredis';
import { RedisRateLimiterStore, ResilienceModule } from 'resilience4nest';

@Module({
  imports: [
    ResilienceModule.forRoot({
      rateLimiterStore: new RedisRateLimiterStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') }),
      rateLimiter: {
        instances: {
          // 100 calls a second to the partner, across every replica of this service.
          partnerApi: { shared: true, limitForPeriod: 100, limitRefreshPeriod: '1s', timeoutDuration: 0, failOpen: false },
        },
      },
    }),
  ],
})
export class SharedLimitModule {}
