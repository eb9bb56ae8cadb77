import { ResilienceRegistry } from 'resilience4nest';

export async function programmatic(registry: ResilienceRegistry): Promise<void> {
  const limiter = registry.rateLimiter('partnerApi');
  await limiter.execute(() => fetch('https://partner.example/quote'));
  const granted: boolean = await limiter.acquirePermission(); // false when refused
  const waitMs: number = limiter.reservePermission(); // 0 now, > 0 reserved (you wait), -1 refused
  limiter.changeLimitForPeriod(200); // from the next period
  limiter.changeTimeoutDuration('1s');
  const { availablePermissions, numberOfWaitingThreads } = limiter.metrics;
  const stop = limiter.onFailure((event) => console.warn(`${event.name} refused`, event.error.message));
  stop();
  console.log({ granted, waitMs, availablePermissions, numberOfWaitingThreads });
}
