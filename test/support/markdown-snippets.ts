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

/** A relative import with no file extension, as the CommonJS layout writes it. */
const RELATIVE_WITHOUT_EXTENSION = /(from '\.{1,2}\/[^']*?)(?<!\.[cm]?[jt]s)'/g;

/**
 * Type-checks every ```ts block of a markdown file against the library (with the repository's
 * tsconfig.json), each as a module of its own written to a temporary folder under docs/examples,
 * so `../quick-start` resolves to docs/examples/quick-start.ts. Each block is checked twice: as
 * a CommonJS module (`snippet-<i>.ts`) and as an ES module (`snippet-<i>.mts`, `module: nodenext`),
 * as a NestJS 12 application made by `nest new` compiles it, its relative imports given the `.js`
 * such an application writes. There a type in a decorated signature must come from `import type`,
 * and a CommonJS package's default export is its whole `module.exports`.
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
    const files = blocks.flatMap((code, i) => {
      const commonJs = join(dir, `snippet-${i}.ts`);
      const esm = join(dir, `snippet-${i}.mts`);
      writeFileSync(commonJs, prepare(code));
      writeFileSync(esm, prepare(code).replace(RELATIVE_WITHOUT_EXTENSION, "$1.js'"));
      return [commonJs, esm];
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
    const options = { ...config!.options, noEmit: true };
    const commonJs = ts.createProgram(
      files.filter((file) => file.endsWith('.ts')),
      options,
    );
    const esm = ts.createProgram(
      files.filter((file) => file.endsWith('.mts')),
      { ...options, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext },
    );
    const diagnostics = [...ts.getPreEmitDiagnostics(commonJs), ...ts.getPreEmitDiagnostics(esm)]
      .filter((d) => d.file && files.includes(d.file.fileName))
      .map((d) => `${d.file!.fileName.split('/').pop()}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    return { blocks: blocks.length, diagnostics };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
