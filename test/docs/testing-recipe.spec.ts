import { loadMarkdownSnippet } from '../support/run-markdown-snippet';

describe("README 'Testing your code'", () => {
  it('settles as written: three refused attempts, 200 ms apart on virtual time', async () => {
    const { quoteWhilePricingIsDown } = await loadMarkdownSnippet('README.md', '## Testing your code');
    const run = quoteWhilePricingIsDown as () => Promise<{ error: unknown; events: string[]; elapsedMs: number }>;
    const { error, events, elapsedMs } = await run();
    expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    expect(events).toEqual(['retry pricing RETRY', 'retry pricing RETRY', 'retry pricing ERROR']);
    expect(elapsedMs).toBe(400);
  });
});
