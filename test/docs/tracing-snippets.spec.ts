import { checkMarkdownSnippets } from '../support/markdown-snippets';

/** Every ```ts block of docs/tracing.md, type-checked against the library as a module of its own. */
describe('docs/tracing.md TypeScript snippets', () => {
  it('all compile', () => {
    const { blocks, diagnostics } = checkMarkdownSnippets('docs/tracing.md', (code) =>
      code.replace("from './app.module'", "from '../../../sample-app/src/app.module'"),
    );
    expect(blocks).toBe(3);
    expect(diagnostics).toEqual([]);
  });
});
