import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/overload.md, type-checked against the library as a module of its own. */
describe('docs/overload.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/overload.md');
    expect(blocks).toBe(4);
    expect(diagnostics).toEqual([]);
  });
});
