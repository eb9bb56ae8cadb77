import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/observability.md, type-checked against the library as a module of its own. */
describe('docs/observability.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/observability.md');
    expect(blocks).toBeGreaterThanOrEqual(5);
    expect(diagnostics).toEqual([]);
  });
});
