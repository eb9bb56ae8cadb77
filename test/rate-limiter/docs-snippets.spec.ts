import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/rate-limiter.md, type-checked against the library as a module of its own. */
describe('docs/rate-limiter.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/rate-limiter.md');
    expect(blocks).toBeGreaterThanOrEqual(4);
    expect(diagnostics).toEqual([]);
  });
});
