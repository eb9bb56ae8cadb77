import { RateLimitedCallOutcome, ResilienceModuleOptions } from 'resilience4nest';

const saysTooMany = (outcome: RateLimitedCallOutcome): boolean =>
  outcome.failed && (outcome.error as { status?: number }).status === 429;

export const options: ResilienceModuleOptions = {
  rateLimiter: { instances: { partnerApi: { limitForPeriod: 100, limitRefreshPeriod: '1s', drainPermissionsOnResult: saysTooMany } } },
};
