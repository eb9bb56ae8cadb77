import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const blocks = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp('```' + lang + '(?: [^\\n]*)?\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

/** Claims the docs make about each other and about package.json, kept in step. */
describe('doc claims', () => {
  it('every Observable example that sends deadlineHeaders() builds the request per subscription (defer)', () => {
    const examples = ['README.md', 'docs/using-with.md']
      .flatMap((file) => blocks(read(file), 'ts'))
      .filter((code) => code.includes('Observable<') && code.includes('deadlineHeaders()'));
    expect(examples.length).toBeGreaterThanOrEqual(2);
    for (const code of examples) expect(code).toMatch(/defer\(\(\) =>/);
  });

  it("README's Install says how to install before the package is on the registry: a packed tarball of this version", () => {
    const { name, version, repository } = JSON.parse(read('package.json')) as {
      name: string;
      version: string;
      repository: { url: string };
    };
    const install = read('README.md').split('\n## Install\n')[1].split('\n## ')[0];
    const commands = blocks(install, 'bash').join('\n');
    expect(commands).toMatch(/\bnpm pack\b/);
    expect(commands).toContain(`npm install ../${name}/${name}-${version}.tgz`);
    expect(install).toContain(repository.url.replace(/^git\+/, ''));
  });

  it("README's Install lists every optional peer of package.json", () => {
    const { peerDependenciesMeta } = JSON.parse(read('package.json')) as {
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const install = read('README.md').split('\n## Install\n')[1].split('\n## ')[0];
    const optional = Object.keys(peerDependenciesMeta).filter((peer) => peerDependenciesMeta[peer].optional === true);
    expect(optional.filter((peer) => !install.includes(`\`${peer}\``))).toEqual([]);
  });

  it("observability.md gives the terminus majors package.json's peer range admits", () => {
    const range = (JSON.parse(read('package.json')) as { peerDependencies: Record<string, string> }).peerDependencies[
      '@nestjs/terminus'
    ];
    const majors = [...range.matchAll(/\^(\d+)\./g)].map((m) => m[1]);
    expect(read('docs/observability.md')).toContain(`\`@nestjs/terminus\` (${majors.join(' or ')})`);
  });

  it('idempotency.md and using-with.md agree that Fastify is supported', () => {
    expect(read('docs/using-with.md')).toContain('`@Idempotent` routes (replays, 409, 422)');
    expect(read('docs/idempotency.md')).not.toMatch(/Express[^.]*untested|may work, untested/);
    expect(read('docs/idempotency.md')).toContain('Fastify');
  });

  it("the README tour's payment requests all carry the customer header every @Idempotent route needs", () => {
    const tour = blocks(read('README.md'), 'bash').join('\n');
    const payments = tour.split('\n').filter((line) => line.includes('localhost:3000/payments'));
    expect(payments.length).toBeGreaterThanOrEqual(3);
    for (const line of payments) expect(line).toContain("-H 'x-customer-id: ");
  });
});
