import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

const root = join(__dirname, '..', '..');

/** Every ```ts block of docs/idempotency.md, type-checked against the library as a module of its own. */
describe('docs/idempotency.md TypeScript snippets', () => {
  it('all compile', () => {
    const doc = readFileSync(join(root, 'docs', 'idempotency.md'), 'utf8');
    const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const dir = mkdtempSync(join(root, 'docs', 'examples', '.idempotency-'));
    try {
      const files = blocks.map((code, i) => {
        const file = join(dir, `snippet-${i}.ts`);
        writeFileSync(file, code);
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
