import { transformSync } from '@babel/core';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The transform jest.config.js applies to NestJS 12's ES modules, run on a module shaped like theirs. */
function loadAsCommonJs(source: string): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'import-meta-'));
  const file = join(dir, 'esm-module.js');
  const { code } = transformSync(source, {
    filename: file,
    babelrc: false,
    configFile: false,
    plugins: [
      ['@babel/plugin-transform-modules-commonjs', { importInterop: 'node' }],
      join(__dirname, 'import-meta.babel-plugin.js'),
    ],
  })!;
  writeFileSync(file, code!);
  return jest.requireActual(file);
}

describe('import.meta in ES modules turned into CommonJS for Jest', () => {
  it('gives url, dirname, filename and resolve their ES module values', () => {
    const loaded = loadAsCommonJs(`
      export const url = import.meta.url;
      export const dirname = import.meta.dirname;
      export const filename = import.meta.filename;
      export const resolved = import.meta.resolve('./esm-module.js');
    `);
    const file = String(loaded.filename);
    expect(loaded.url).toBe(pathToFileURL(file).href);
    expect(loaded.dirname).toBe(join(file, '..'));
    expect(loaded.resolved).toBe(pathToFileURL(file).href);
  });

  it('keeps a module that declares its own require from import.meta.url working', () => {
    const loaded = loadAsCommonJs(`
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      export const sep = require('node:path').sep;
    `);
    expect(loaded.sep).toBe(require('node:path').sep);
  });

  it('refuses an import.meta use it has no equivalent for, naming it', () => {
    expect(() => loadAsCommonJs('export const env = import.meta.env;')).toThrow(/no CommonJS equivalent/);
  });
});
