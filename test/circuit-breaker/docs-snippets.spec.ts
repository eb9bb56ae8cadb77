import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/fleet-breaker.md, type-checked against the library as a module of its own. */
describe('docs/fleet-breaker.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/fleet-breaker.md');
    expect(blocks).toBeGreaterThanOrEqual(1);
    expect(diagnostics).toEqual([]);
  });
});
