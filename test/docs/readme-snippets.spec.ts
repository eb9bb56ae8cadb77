import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of the README, type-checked against the library as a module of its own. */
describe('README TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('README.md', (code) =>
      code.replace(/from '\.\/quick-start'/g, "from '../quick-start'"),
    );
    expect(blocks).toBeGreaterThanOrEqual(4);
    expect(diagnostics).toEqual([]);
  });
});
