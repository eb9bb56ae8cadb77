import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as ts from 'typescript';
import { snippetUnder } from './run-markdown-snippet';

const root = join(__dirname, '..', '..');
const run = promisify(execFile);

/** ES module JavaScript of a TypeScript module, relative imports given their `.mjs` as Node's ESM resolver wants. */
export function toEsm(code: string): string {
  const js = ts.transpileModule(code, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
    },
  }).outputText;
  return js.replace(/from '(\.\.?\/[^']+)'/g, "from '$1.mjs'");
}

/**
 * Runs the ```ts block under `heading` of a markdown file as an ES module
 * in a Node process of its own (`.mjs` files inside the repository, where
 * `resilience4nest` resolves to the built package through its `exports`, as
 * in an application made by `nest new` on NestJS 12), calls
 * its export `exported` and answers what it returned, through JSON.
 * `docs/examples/quick-start.ts` sits beside it as `./quick-start`. Builds
 * `dist/` first when it is missing or older than `lib/`.
 */
export async function runMarkdownSnippetAsEsm(
  markdownPath: string,
  heading: string,
  exported: string,
): Promise<unknown> {
  await ensureBuilt();
  const dir = mkdtempSync(join(root, 'test', 'docs', '.esm-'));
  try {
    writeFileSync(join(dir, 'snippet.mjs'), toEsm(snippetUnder(markdownPath, heading)));
    writeFileSync(
      join(dir, 'quick-start.mjs'),
      toEsm(readFileSync(join(root, 'docs', 'examples', 'quick-start.ts'), 'utf8')),
    );
    writeFileSync(
      join(dir, 'main.mjs'),
      `import 'reflect-metadata';\nimport { ${exported} } from './snippet.mjs';\n` +
        `const answer = await ${exported}();\nprocess.stdout.write(JSON.stringify(answer, (k, v) => v instanceof Error ? { name: v.name, code: v.code, message: v.message } : v));\n`,
    );
    const { stdout } = await run(process.execPath, [join(dir, 'main.mjs')], {
      cwd: dir,
      env: { ...process.env, NODE_ENV: 'test' },
    });
    return JSON.parse(stdout) as unknown;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The newest modification time of the files under `dir`. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** Builds `dist/` (as `npm run build` does) when it is missing or older than a file of `lib/`. */
export async function ensureBuilt(): Promise<void> {
  const built = join(root, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newest(join(root, 'lib'))) return;
  await run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
  });
}
