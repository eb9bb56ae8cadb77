import { loadMarkdownSnippet } from '../support/run-markdown-snippet';

describe('docs/testing.md', () => {
  it('runs its Jest example as written: two injected 503s open the breaker, the third call is refused', async () => {
    const { pricingBreakerOpens } = await loadMarkdownSnippet('docs/testing.md', '## Jest');
    const lines = await (pricingBreakerOpens as () => Promise<string[]>)();
    expect(lines).toEqual([
      'circuitBreaker pricing ERROR',
      'circuitBreaker pricing ERROR',
      'circuitBreaker pricing FAILURE_RATE_EXCEEDED',
      'circuitBreaker pricing STATE_TRANSITION CLOSED_TO_OPEN',
      'circuitBreaker pricing NOT_PERMITTED',
    ]);
  });
});
