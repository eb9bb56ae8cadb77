import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/live-reconfiguration.md, type-checked against the library as a module of its own. */
describe('docs/live-reconfiguration.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/live-reconfiguration.md');
    expect(blocks).toBe(3);
    expect(diagnostics).toEqual([]);
  });
});
