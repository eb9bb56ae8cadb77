import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

const root = join(__dirname, '..', '..');

/** Every ```ts block of the README, type-checked against the library as a module of its own. */
describe('README TypeScript snippets', () => {
  it('all compile', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const dir = mkdtempSync(join(root, 'docs', 'examples', '.readme-'));
    try {
      const files = blocks.map((code, i) => {
        const file = join(dir, `snippet-${i}.ts`);
        writeFileSync(file, code.replace(/from '\.\/quick-start'/g, "from '../quick-start'"));
        return file;
      });
      const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      });
      const program = ts.createProgram(files, { ...config!.options, noEmit: true });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file && files.includes(d.file.fileName))
        .map((d) => `${d.file!.fileName.split('/').pop()}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      expect(diagnostics).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
