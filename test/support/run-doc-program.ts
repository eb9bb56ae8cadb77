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
 * The blocks marked `run=<id>` in one module system, each written as a module of its own in a
 * temporary folder inside the repository (so `resilience4nest` resolves to the built package
 * through its `exports`, as an application's import does), beside the drivers of
 * test/docs/doc-programs.ts. Module programs run one after another in one Node process; a
 * process program is started on its own.
 */
abstract class Programs {
  abstract readonly dir: string;
  /** The Node options that load a module of this system (a TypeScript hook, or none). */
  protected abstract readonly node: readonly string[];
  /** The folder programs are started in. */
  protected abstract readonly cwd: string;
  /** The file name of the block `id`. */
  protected abstract file(id: string): string;
  /** The source of a block as this module system runs it. */
  protected abstract source(code: string): string;
  /** The runner: runs the module programs named on its command line and writes their results, as JSON, to the first argument. */
  protected abstract readonly runner: string;

  /** Writes `block` as a module; answers its path. */
  write(block: DocBlock): string {
    const file = join(this.dir, this.file(block.run!));
    writeFileSync(file, this.source(block.code));
    return file;
  }

  /** Runs the module programs of `blocks` one after another in one Node process; answers each one's result by id. */
  async runModules(blocks: readonly DocBlock[]): Promise<Record<string, ProgramResult>> {
    await ensureBuilt();
    for (const block of blocks) this.write(block);
    const out = join(this.dir, 'results.json');
    await run(process.execPath, [...this.node, join(this.dir, this.runner), out, ...blocks.map((b) => b.run!)], {
      cwd: this.cwd,
      env: { ...process.env, NODE_ENV: 'test' },
      timeout: 540_000,
      // Programs log (Nest, a console span exporter): the output is kept for the error of a failed run.
      maxBuffer: 64 * 1024 * 1024,
    });
    return JSON.parse(readFileSync(out, 'utf8')) as Record<string, ProgramResult>;
  }

  /** Starts `block` as a program of its own, with the environment `env` adds. */
  async start(block: DocBlock): Promise<(env: Record<string, string>) => RunningProgram> {
    await ensureBuilt();
    const file = this.write(block);
    return (env) => startProcess([...this.node, file], this.cwd, env);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * CommonJS: TypeScript modules under docs/examples (`./quick-start` is docs/examples/quick-start.ts)
 * run by Node with ts-node, as `tsc` with the repository's `module: commonjs` emits them.
 */
export class CommonJsPrograms extends Programs {
  readonly dir = mkdtempSync(join(root, 'docs', 'examples', '.programs-'));
  protected readonly node = ['-r', 'ts-node/register/transpile-only'];
  protected readonly cwd = root;
  protected readonly runner = 'run-programs.js';

  constructor() {
    super();
    writeFileSync(join(this.dir, 'doc-programs.ts'), readFileSync(join(root, 'test', 'docs', 'doc-programs.ts')));
    writeFileSync(join(this.dir, this.runner), RUN_COMMONJS);
  }

  protected file(id: string): string {
    return `${id}.ts`;
  }

  protected source(code: string): string {
    return code.replace(APPLICATION_IMPORT, "from '../quick-start'");
  }
}

/**
 * ES modules: `.mjs` files under test/docs, beside the quick start transpiled as one, as in an
 * application made by `nest new` on NestJS 12.
 */
export class EsModulePrograms extends Programs {
  readonly dir = mkdtempSync(join(root, 'test', 'docs', '.esm-programs-'));
  protected readonly node = [];
  protected readonly cwd = this.dir;
  protected readonly runner = 'run-programs.mjs';

  constructor() {
    super();
    writeFileSync(
      join(this.dir, 'quick-start.mjs'),
      toEsm(readFileSync(join(root, 'docs', 'examples', 'quick-start.ts'), 'utf8')),
    );
    writeFileSync(
      join(this.dir, 'doc-programs.mjs'),
      toEsm(readFileSync(join(root, 'test', 'docs', 'doc-programs.ts'), 'utf8')),
    );
    writeFileSync(join(this.dir, this.runner), RUN_ES_MODULES);
  }

  protected file(id: string): string {
    return `${id}.mjs`;
  }

  protected source(code: string): string {
    return toEsm(code.replace(APPLICATION_IMPORT, "from './quick-start'"));
  }
}

/** A program that has not answered within two minutes fails, and the next one runs. */
const WITHIN = `const within = (answer) =>
  Promise.race([
    answer,
    new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 120 s')), 120_000).unref()),
  ]);`;

/** Both runners end with `process.exit`: a block may leave a client or a timer behind, as its program's own exit would end them. */
const RUN_COMMONJS = `const { writeFileSync } = require('node:fs');
const { DOC_PROGRAMS } = require('./doc-programs');

const [out, ...ids] = process.argv.slice(2);
${WITHIN}
(async () => {
  const results = {};
  for (const id of ids) {
    try {
      results[id] = { answer: await within(DOC_PROGRAMS[id].run(async () => require('./' + id))) };
    } catch (error) {
      results[id] = { error: error instanceof Error ? error.stack : String(error) };
    }
  }
  writeFileSync(out, JSON.stringify(results));
  process.exit(0);
})();
`;

const RUN_ES_MODULES = `import { writeFileSync } from 'node:fs';
import { DOC_PROGRAMS } from './doc-programs.mjs';

const [out, ...ids] = process.argv.slice(2);
${WITHIN}
const results = {};
for (const id of ids) {
  try {
    results[id] = { answer: await within(DOC_PROGRAMS[id].run(() => import('./' + id + '.mjs'))) };
  } catch (error) {
    results[id] = { error: error instanceof Error ? error.stack : String(error) };
  }
}
writeFileSync(out, JSON.stringify(results));
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
