import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import * as ts from 'typescript';

const ROOT = join(__dirname, '../..');
const LIB = join(ROOT, 'lib');

interface Manifest {
  readonly dependencies?: Record<string, string>;
  readonly devDependencies: Record<string, string>;
  readonly peerDependencies: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** The package a module specifier names (`@scope/name` or `name`), or undefined for a relative or Node path. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier))
    return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every package lib/ imports (statically, or with `require`/`import()` at run time), and those it loads with `require`. */
function packagesOfLib(): { readonly all: Set<string>; readonly required: Set<string> } {
  const all = new Set<string>();
  const required = new Set<string>();
  for (const file of sourcesUnder(LIB)) {
    const source = readFileSync(file, 'utf8');
    for (const { fileName } of ts.preProcessFile(source, true, false).importedFiles) {
      const name = packageOf(fileName);
      if (name !== undefined) all.add(name);
    }
    // Node's `require`, not a method of that name.
    for (const match of source.matchAll(/(?<![.\w])require\(\s*'([^']+)'\s*\)/g)) {
      const name = packageOf(match[1]);
      if (name === undefined) continue;
      all.add(name);
      required.add(name);
    }
  }
  return { all, required };
}

/** The major versions a range of the form `^a.b.c || ^d.e.f` accepts. */
function majorsOf(range: string): number[] {
  return range.split('||').map((part) => Number(/^\s*\^(\d+)\./.exec(part)?.[1]));
}

describe('package.json peerDependencies', () => {
  const { all, required } = packagesOfLib();

  it('lists every package lib/ imports or loads', () => {
    expect(all.size).toBeGreaterThan(5);
    const declared = { ...manifest.dependencies, ...manifest.peerDependencies };
    expect([...all].filter((name) => declared[name] === undefined).sort()).toEqual([]);
  });

  it('marks every package lib/ loads only when a feature needs it as an optional peer', () => {
    expect([...required].sort()).toEqual(expect.arrayContaining(['@nestjs/microservices', 'nats']));
    expect([...required].filter((name) => manifest.peerDependenciesMeta?.[name]?.optional !== true).sort()).toEqual([]);
  });

  it('gives the transports the ranges the code supports, the versions the suite runs included', () => {
    expect(manifest.peerDependencies['@nestjs/microservices']).toBe(manifest.peerDependencies['@nestjs/common']);
    expect(manifest.peerDependencies.nats).toBe('^2.0.0');
    for (const name of ['@nestjs/microservices', 'nats']) {
      const installed = // Read from node_modules: NestJS 12's microservices package exports no ./package.json.
        (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
          .version;
      expect([name, majorsOf(manifest.peerDependencies[name])]).toEqual([
        name,
        expect.arrayContaining([Number(installed.split('.')[0])]),
      ]);
    }
  });

  it('are the same in package-lock.json, so npm ci agrees with package.json', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, Manifest>;
    };
    expect(lock.packages[''].peerDependencies).toEqual(manifest.peerDependencies);
    expect(lock.packages[''].peerDependenciesMeta).toEqual(manifest.peerDependenciesMeta);
  });
});
