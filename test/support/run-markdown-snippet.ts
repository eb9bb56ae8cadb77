import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const root = join(__dirname, '..', '..');

/** The first ```ts block after the line `heading` of a markdown file. */
export function snippetUnder(markdownPath: string, heading: string): string {
  const markdown = readFileSync(join(root, markdownPath), 'utf8');
  const start = markdown.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`${markdownPath} has no heading '${heading}'`);
  const block = /```ts[^\n]*\n([\s\S]*?)```/.exec(markdown.slice(start));
  if (block === null) throw new Error(`${markdownPath} has no ts block under '${heading}'`);
  return block[1];
}

/**
 * Loads the ```ts block under `heading` of a markdown file as a module, as
 * written (in a temporary folder under docs/examples, so `./quick-start`
 * imports docs/examples/quick-start.ts; `resilience4nest` maps to lib/),
 * and answers its exports. The folder is removed afterwards.
 */
export async function loadMarkdownSnippet(markdownPath: string, heading: string): Promise<Record<string, unknown>> {
  const code = snippetUnder(markdownPath, heading);
  const dir = mkdtempSync(join(root, 'docs', 'examples', `.${basename(markdownPath, '.md').toLowerCase()}-run-`));
  try {
    const file = join(dir, 'snippet.ts');
    writeFileSync(file, code.replace(/from '\.\/quick-start'/g, "from '../quick-start'"));
    return (await import(file)) as Record<string, unknown>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
