import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as ts from 'typescript';
import type { RunningProgram } from '../docs/doc-programs';
import { DocBlock } from './doc-blocks';

const root = join(__dirname, '..', '..');
const run = promisify(execFile);

/** A block's relative imports of the application (`./quick-start`, `./app.module`) lead to docs/examples/quick-start.ts. */
const APPLICATION_IMPORT = /from '\.\/(?:quick-start|app\.module)'/g;

/** What one program answered, or how it failed. */
export type ProgramResult = { readonly answer: unknown } | { readonly error: string };

/** The JSON an answer travels as between processes, so that both module systems answer alike. */
export const asJson = (value: unknown): unknown =>
  value === undefined ? undefined : JSON.parse(JSON.stringify(value));

/**
 * A temporary folder under docs/examples holding blocks as TypeScript modules of their own,
 * each importing the application as `../quick-start`: what Jest loads (CommonJS, with
 * `resilience4nest` mapped to lib/) and ts-node starts.
 */
export class CommonJsPrograms {
  readonly dir = mkdtempSync(join(root, 'docs', 'examples', '.programs-'));

  /** Writes `block` as `<id>.ts`; answers its path. */
  write(block: DocBlock): string {
    const file = join(this.dir, `${block.run}.ts`);
    writeFileSync(file, block.code.replace(APPLICATION_IMPORT, "from '../quick-start'"));
    return file;
  }

  /**
   * Starts `block` as a program: Node with ts-node, `resilience4nest` resolved to the built package
   * (as an application requires it), which is built first when `lib/` is newer.
   */
  async start(block: DocBlock): Promise<(env: Record<string, string>) => RunningProgram> {
    await ensureBuilt();
    const file = this.write(block);
    return (env) => startProcess(['-r', 'ts-node/register/transpile-only', file], root, env);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A temporary folder under test/docs holding blocks as ES modules (`.mjs`), beside the quick
 * start and the programs' drivers: inside the repository, so `resilience4nest` resolves to the
 * built package through its `exports`, as in an application made by `nest new` on NestJS 12.
 */
export class EsModulePrograms {
  readonly dir = mkdtempSync(join(root, 'test', 'docs', '.esm-programs-'));

  constructor() {
    writeFileSync(
      join(this.dir, 'quick-start.mjs'),
      toEsm(readFileSync(join(root, 'docs', 'examples', 'quick-start.ts'), 'utf8')),
    );
    writeFileSync(
      join(this.dir, 'doc-programs.mjs'),
      toEsm(readFileSync(join(root, 'test', 'docs', 'doc-programs.ts'), 'utf8')),
    );
    writeFileSync(join(this.dir, 'run-programs.mjs'), RUN_PROGRAMS);
  }

  /** Writes `block` as `<id>.mjs`; answers its path. */
  write(block: DocBlock): string {
    const file = join(this.dir, `${block.run}.mjs`);
    writeFileSync(file, toEsm(block.code.replace(APPLICATION_IMPORT, "from './quick-start'")));
    return file;
  }

  /** Runs the module programs of `blocks` one after another in one Node process; answers each one's result by id. */
  async runModules(blocks: readonly DocBlock[]): Promise<Record<string, ProgramResult>> {
    await ensureBuilt();
    for (const block of blocks) this.write(block);
    const out = join(this.dir, 'results.json');
    await run(process.execPath, [join(this.dir, 'run-programs.mjs'), out, ...blocks.map((b) => b.run!)], {
      cwd: this.dir,
      env: { ...process.env, NODE_ENV: 'test' },
      timeout: 300_000,
    });
    return JSON.parse(readFileSync(out, 'utf8')) as Record<string, ProgramResult>;
  }

  /** Starts `block` as an ES module program. */
  start(block: DocBlock): (env: Record<string, string>) => RunningProgram {
    const file = this.write(block);
    return (env) => startProcess([file], this.dir, env);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The ES module that runs the module programs named on its command line and writes their results as JSON. */
const RUN_PROGRAMS = `import { writeFileSync } from 'node:fs';
import { DOC_PROGRAMS } from './doc-programs.mjs';

const [out, ...ids] = process.argv.slice(2);
const results = {};
for (const id of ids) {
  try {
    results[id] = { answer: await DOC_PROGRAMS[id].run(() => import('./' + id + '.mjs')) };
  } catch (error) {
    results[id] = { error: error instanceof Error ? error.stack : String(error) };
  }
}
writeFileSync(out, JSON.stringify(results));
// A block may leave a client or a timer behind, as a program's own shutdown would end them.
process.exit(0);
`;

function startProcess(args: string[], cwd: string, env: Record<string, string>): RunningProgram {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { output: () => output, exited, kill: () => child.kill() };
}

/** ES module JavaScript of a TypeScript module, relative imports given their `.mjs` as Node's ESM resolver wants. */
function toEsm(code: string): string {
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
async function ensureBuilt(): Promise<void> {
  const built = join(root, 'dist', 'index.js');
  if (existsSync(built) && statSync(built).mtimeMs >= newest(join(root, 'lib'))) return;
  await run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
  });
}
