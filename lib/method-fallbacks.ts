import { FallbackPolicy } from './fallback/fallback';

/**
 * The fallback policies made for decorated methods (the registry holds only
 * named instances): the explorer adds each one as it composes a method's
 * pipeline at `onModuleInit`, and observability reads them afterwards.
 */
export class MethodFallbacks {
  private readonly policies: FallbackPolicy[] = [];

  /** Records the fallback policy of one decorated method. */
  add(policy: FallbackPolicy): void {
    this.policies.push(policy);
  }

  /** Every fallback policy recorded so far, in the order they were made. */
  get all(): readonly FallbackPolicy[] {
    return this.policies;
  }
}
