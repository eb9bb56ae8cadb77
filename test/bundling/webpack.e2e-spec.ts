/*
 * The library bundled into an application by webpack (as `nest build
 * --webpack` does for code it compiles, or any bundler that takes the
 * library in) must still find its optional peers: prom-client and
 * @nestjs/terminus, left to Node as externals or bundled in.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as ts from 'typescript';
import webpack from 'webpack';

// Runs for many seconds on an idle machine: headroom for a busy one.
jest.setTimeout(120_000);

const root = join(__dirname, '..', '..');
const FIXTURE = join('test', 'bundling', 'fixture', 'main.ts');

/** Packages every variant leaves to Node, as an app's bundler config usually does for Nest itself. */
const ALWAYS_EXTERNAL = /^(@nestjs\/|rxjs(\/|$)|reflect-metadata$|tslib$)/;

/** Transpiles lib/ and the fixture to JavaScript under `out`, keeping their relative paths (what a build of the package gives the bundler). */
function transpile(out: string): void {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
  };
  const sources = [
    FIXTURE,
    ...(readdirSync(join(root, 'lib'), { recursive: true }) as string[]).map((f) => join('lib', f)),
  ];
  for (const source of sources) {
    if (!source.endsWith('.ts') || source.endsWith('.spec.ts')) continue;
    const { outputText } = ts.transpileModule(readFileSync(join(root, source), 'utf8'), {
      compilerOptions: options,
      fileName: source,
    });
    const target = join(out, source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
}

/** Bundles the transpiled fixture with webpack; `external` says which further packages stay outside the bundle. */
async function bundle(
  dir: string,
  external: (request: string) => boolean,
): Promise<{ file: string; warnings: string[] }> {
  const compiler = webpack({
    mode: 'none',
    target: 'node',
    context: dir,
    entry: `./${FIXTURE.replace(/\.ts$/, '.js')}`,
    output: { path: join(dir, 'dist'), filename: 'main.js' },
    externals: [
      ({ request }, callback) =>
        request !== undefined && (ALWAYS_EXTERNAL.test(request) || external(request))
          ? callback(undefined, `commonjs ${request}`)
          : callback(),
    ],
    optimization: { minimize: false },
    infrastructureLogging: { level: 'none' },
  });
  const stats = await new Promise<webpack.Stats>((resolve, reject) =>
    compiler.run((error, result) => (error || !result ? reject(error) : resolve(result))),
  );
  await new Promise<void>((resolve) => compiler.close(() => resolve()));
  const info = stats.toJson({ all: false, errors: true, warnings: true });
  if (stats.hasErrors()) throw new Error(`webpack failed: ${info.errors?.map((e) => e.message).join('\n')}`);
  const warnings = (info.warnings ?? []).map((w) => `${w.moduleName ?? ''}: ${w.message}`);
  return { file: join(dir, 'dist', 'main.js'), warnings };
}

describe('the library bundled by webpack', () => {
  // Under node_modules/.cache, so the bundle's externals resolve from the repository's node_modules.
  const cache = join(root, 'node_modules', '.cache');
  let dir: string;

  beforeAll(() => {
    mkdirSync(cache, { recursive: true });
    dir = mkdtempSync(join(cache, 'resilience4nest-bundle-'));
    transpile(dir);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['left to Node as externals', (request: string) => request === 'prom-client'],
    ['bundled in', () => false],
  ])('finds prom-client and @nestjs/terminus when prom-client is %s', async (_, external) => {
    const { file, warnings } = await bundle(dir, external);
    const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: dir }).catch(
      (error: { stderr?: string }) => {
        throw new Error(`the bundled app failed: ${error.stderr}`);
      },
    );
    const result = JSON.parse(stdout);
    expect(result.charged).toBe('charged');
    expect(result.series).toEqual(
      expect.arrayContaining([
        'resilience4j_circuitbreaker_state{name="psp",state="closed"} 1',
        'resilience4j_circuitbreaker_calls_seconds_count{name="psp",kind="successful"} 1',
      ]),
    );
    expect(result.health).toMatchObject({ circuitBreakers: { status: 'up' } });
    // Nothing in the library hides a module from the bundler behind a computed name.
    expect(warnings.filter((w) => w.startsWith('./lib/'))).toEqual([]);
  });
});
