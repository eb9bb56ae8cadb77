import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/*
 * The type tests of test/types on the other supported TypeScript majors (`npm test`'s own
 * `tsc -p tsconfig.json` checks them on the project's TypeScript 5). Each file is compiled as
 * written, where every `@ts-expect-error` must meet its error, and once more without the
 * directives, where the errors must stand on exactly the lines the directives announced.
 */

const root = join(__dirname, '..', '..');
const DIRECTIVE = '// @ts-expect-error';

/** The compilers: each package's own `tsc`, so the native TypeScript 7 runs the same way as the JavaScript ones. */
const COMPILERS = [
  { major: 6, tsc: join(root, 'node_modules', 'ts6', 'bin', 'tsc') },
  { major: 7, tsc: join(root, 'node_modules', 'ts7', 'bin', 'tsc') },
];

const typeTests = readdirSync(__dirname)
  .filter((f) => f.endsWith('.types.ts'))
  .map((f) => join(__dirname, f));

/** 1-based numbers of the lines a directive stands above. */
function announcedLines(source: string): number[] {
  return source.split('\n').flatMap((line, i) => (line.trim().startsWith(DIRECTIVE) ? [i + 2] : []));
}

/** `file(line,col): error TSnnnn: …` lines of a `tsc --pretty false` run. */
function errorLines(output: string): { file: string; line: number; text: string }[] {
  return [...output.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+: .*)$/gm)].map((m) => ({
    file: m[1],
    line: Number(m[2]),
    text: m[3],
  }));
}

function runTsc(tsc: string, project: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [tsc, '-p', project, '--pretty', 'false'],
      { cwd: root, maxBuffer: 16 << 20 },
      (_e, out) => resolve(String(out)),
    );
  });
}

describe('type tests of test/types', () => {
  let dir: string;

  beforeAll(() => {
    // Inside the repository, so `rxjs` resolves from its node_modules; a dot folder, so no tsconfig glob picks it up.
    dir = mkdtempSync(join(__dirname, '.stripped-'));
    const stripped = typeTests.map((file) => {
      const copy = join(dir, relative(__dirname, file));
      writeFileSync(copy, readFileSync(file, 'utf8').replaceAll(DIRECTIVE, '// expected error:'));
      return copy;
    });
    // Options of tsconfig.json that bear on the decorators' types, in the spelling TypeScript 6 and 7 both accept.
    const compilerOptions = {
      target: 'ES2022',
      module: 'preserve',
      moduleResolution: 'bundler',
      lib: ['ES2022'],
      strict: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      noImplicitOverride: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
      paths: { resilience4nest: [relative(dir, join(root, 'lib', 'index.ts'))] },
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [...typeTests, ...stripped] }));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the type tests, each with refused cases', () => {
    expect(typeTests.map((f) => relative(root, f))).toContain('test/types/fallback.types.ts');
    for (const file of typeTests) expect(announcedLines(readFileSync(file, 'utf8')).length).toBeGreaterThan(0);
  });

  it.each(COMPILERS)(
    'TypeScript $major accepts what they accept and refuses each case on its line',
    async ({ major, tsc }) => {
      if (!existsSync(tsc)) throw new Error(`${tsc} is missing: \`npm ci\` installs it (dev dependency ts${major})`);
      const errors = errorLines(await runTsc(tsc, join(dir, 'tsconfig.json')));
      const strippedErrors = errors.filter((e) => e.file.includes('.stripped-'));
      // As written: no error anywhere (an unused directive would be one).
      expect(errors.filter((e) => !strippedErrors.includes(e))).toEqual([]);
      for (const file of typeTests) {
        const name = relative(__dirname, file);
        const lines = [...new Set(strippedErrors.filter((e) => e.file.endsWith(name)).map((e) => e.line))];
        expect({ name, lines: lines.sort((a, b) => a - b) }).toEqual({
          name,
          lines: announcedLines(readFileSync(file, 'utf8')),
        });
      }
    },
    180_000,
  );
});
