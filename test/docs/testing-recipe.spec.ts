import { loadMarkdownSnippet } from '../support/run-markdown-snippet';
import { runMarkdownSnippetAsEsm } from '../support/run-markdown-snippet-esm';

interface Answer {
  readonly error: unknown;
  readonly events: string[];
  readonly elapsedMs: number;
}

const expectSettled = ({ error, events, elapsedMs }: Answer): void => {
  expect(error).toMatchObject({ code: 'ECONNREFUSED' });
  expect(events).toEqual(['retry pricing RETRY', 'retry pricing RETRY', 'retry pricing ERROR']);
  expect(elapsedMs).toBe(400);
};

describe("README 'Testing your code'", () => {
  it('settles as written in CommonJS: three refused attempts, 200 ms apart on virtual time', async () => {
    const { quoteWhilePricingIsDown } = await loadMarkdownSnippet('README.md', '## Testing your code');
    expectSettled(await (quoteWhilePricingIsDown as () => Promise<Answer>)());
  });

  it('settles as written in an ES module, against the built package', async () => {
    expectSettled(
      (await runMarkdownSnippetAsEsm('README.md', '## Testing your code', 'quoteWhilePricingIsDown')) as Answer,
    );
  }, 120_000);
});
