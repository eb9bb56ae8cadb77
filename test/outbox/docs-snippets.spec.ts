import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/outbox.md, type-checked against the library as a module of its own. */
describe('docs/outbox.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/outbox.md');
    expect(blocks).toBeGreaterThanOrEqual(6);
    expect(diagnostics).toEqual([]);
  });
});
