import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as ts from 'typescript';

const root = join(__dirname, '..', '..');

/** What type-checking the ```ts blocks of one markdown file found. */
export interface MarkdownSnippetCheck {
  /** How many ```ts blocks the file holds. */
  readonly blocks: number;
  /** One `snippet-<i>.ts: <message>` line per compiler diagnostic in a block; empty when all compile. */
  readonly diagnostics: string[];
}

/**
 * Type-checks every ```ts block of a markdown file against the library (with the repository's
 * tsconfig.json), each as a module of its own written to a temporary folder under docs/examples,
 * so `../quick-start` resolves to docs/examples/quick-start.ts.
 *
 * @param markdownPath - Path of the markdown file from the repository root, e.g. `docs/idempotency.md`.
 * @param prepare - Rewrites a block before it is written (e.g. to fix up its relative imports).
 */
export function checkMarkdownSnippets(
  markdownPath: string,
  prepare: (code: string) => string = (code) => code,
): MarkdownSnippetCheck {
  const markdown = readFileSync(join(root, markdownPath), 'utf8');
  const blocks = [...markdown.matchAll(/```ts[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1]);
  const prefix = `.${basename(markdownPath, '.md').toLowerCase()}-`;
  const dir = mkdtempSync(join(root, 'docs', 'examples', prefix));
  try {
    const files = blocks.map((code, i) => {
      const file = join(dir, `snippet-${i}.ts`);
      writeFileSync(file, prepare(code));
      return file;
    });
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    const program = ts.createProgram(files, { ...config!.options, noEmit: true });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.includes(d.file.fileName))
      .map((d) => `${d.file!.fileName.split('/').pop()}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    return { blocks: blocks.length, diagnostics };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
