import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/hedging.md, type-checked against the library as a module of its own. */
describe('docs/hedging.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/hedging.md');
    expect(blocks).toBe(3);
    expect(diagnostics).toEqual([]);
  });
});
