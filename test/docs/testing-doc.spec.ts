import { loadMarkdownSnippet } from '../support/run-markdown-snippet';
import { runMarkdownSnippetAsEsm } from '../support/run-markdown-snippet-esm';

const OPENED = [
  'circuitBreaker pricing ERROR',
  'circuitBreaker pricing ERROR',
  'circuitBreaker pricing FAILURE_RATE_EXCEEDED',
  'circuitBreaker pricing STATE_TRANSITION CLOSED_TO_OPEN',
  'circuitBreaker pricing NOT_PERMITTED',
];

describe('docs/testing.md', () => {
  it('runs its Jest example as written in CommonJS: two injected 503s open the breaker, the third call is refused', async () => {
    const { pricingBreakerOpens } = await loadMarkdownSnippet('docs/testing.md', '## Jest');
    expect(await (pricingBreakerOpens as () => Promise<string[]>)()).toEqual(OPENED);
  });

  it('runs it as written in an ES module, against the built package', async () => {
    expect(await runMarkdownSnippetAsEsm('docs/testing.md', '## Jest', 'pricingBreakerOpens')).toEqual(OPENED);
  }, 120_000);
});
