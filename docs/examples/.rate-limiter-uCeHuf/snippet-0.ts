import { Injectable, Module } from '@nestjs/common';
import { RateLimiter, ResilienceModule } from 'resilience4nest';

@Injectable()
export class PartnerClient {
  @RateLimiter('partnerApi')
  async quote(sku: string): Promise<{ sku: string; price: number }> {
    return { sku, price: 42 };
  }
}

@Module({
  imports: [
    ResilienceModule.forRoot({
      rateLimiter: {
        instances: {
          // The partner allows 100 calls a second; a caller waits up to 250 ms for a permit.
          partnerApi: { limitForPeriod: 100, limitRefreshPeriod: '1s', timeoutDuration: '250ms' },
        },
      },
    }),
  ],
  providers: [PartnerClient],
})
export class AppModule {}
