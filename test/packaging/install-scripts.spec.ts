import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The lifecycle scripts npm runs when the package is installed (from the registry or as a git dependency). */
const INSTALL_TIME = ['preinstall', 'install', 'postinstall', 'prepare'];

describe('package.json', () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };

  it('has no script npm runs at install time (npm 11 asks allowScripts for each)', () => {
    expect(Object.keys(manifest.scripts).filter((name) => INSTALL_TIME.includes(name))).toEqual([]);
  });

  it('still builds before every pack and publish', () => {
    expect(manifest.scripts.prepack).toBe('npm run build');
  });
});
