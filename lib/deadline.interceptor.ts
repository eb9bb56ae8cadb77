import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { contextStorage, DEFAULT_MAX_DEADLINE_BUDGET_MS, ResilienceContext } from './context';
import { DeadlineExceededError } from './errors';
import { ResilienceRegistry } from './resilience.registry';
import { INVALID_DEADLINE_HEADER } from './resilience.messages';

const DIGITS = /^\s*\d+\s*$/;

/**
 * Opens the request's deadline scope: the remaining time from the inbound
 * deadline header (clamped to `maxBudget`, 24 h by default), else the default budget; with
 * neither, the request gets no scope. A malformed header is ignored with a warning, never a crash; a
 * request that arrives with no time left fails at once.
 */
@Injectable()
export class DeadlineInterceptor implements NestInterceptor {
  private readonly logger = new Logger('ResilienceModule');
  private warnedBadHeader = false;

  constructor(private readonly registry: ResilienceRegistry) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<{ headers?: Record<string, string | string[] | undefined> }>();
    const { clock, deadline } = this.registry.options;
    const budget = this.budgetOf(request.headers?.[deadline.header]);
    // No deadline applies: no scope to open (each time limiter still bounds its own attempts).
    if (budget === undefined) return next.handle();
    if (budget === 0)
      throw new DeadlineExceededError('deadline', `request arrived with no time left in '${deadline.header}'`);
    const scope = new ResilienceContext(clock, clock.now() + budget, deadline.header);
    return new Observable((subscriber) => {
      const subscription = contextStorage.run(scope, () => next.handle().subscribe(subscriber));
      return () => {
        subscription.unsubscribe();
        scope.dispose();
      };
    });
  }

  private budgetOf(raw: string | string[] | undefined): number | undefined {
    const { defaultBudget, maxBudget, header } = this.registry.options.deadline;
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value === undefined) return defaultBudget;
    if (!DIGITS.test(value)) {
      if (!this.warnedBadHeader) {
        this.warnedBadHeader = true;
        this.logger.warn(INVALID_DEADLINE_HEADER(header, value));
      }
      return defaultBudget;
    }
    const asked = Number(value);
    const ceiling = maxBudget ?? DEFAULT_MAX_DEADLINE_BUDGET_MS;
    return asked > ceiling ? ceiling : asked;
  }
}
