import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/idempotency.md, type-checked against the library as a module of its own. */
describe('docs/idempotency.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/idempotency.md');
    expect(blocks).toBeGreaterThanOrEqual(8);
    expect(diagnostics).toEqual([]);
  });
});
