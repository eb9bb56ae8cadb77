import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/using-with.md, type-checked against the library as a module of its own. */
describe('docs/using-with.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/using-with.md');
    expect(blocks).toBeGreaterThanOrEqual(7);
    expect(diagnostics).toEqual([]);
  });
});
