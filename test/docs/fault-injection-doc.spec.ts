import { checkMarkdownSnippets } from '../support/markdown-snippets';

describe('docs/fault-injection.md', () => {
  it('has TypeScript snippets that compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/fault-injection.md');
    expect(blocks).toBe(2);
    expect(diagnostics).toEqual([]);
  });
});
