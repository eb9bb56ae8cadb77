import { writeFileSync } from 'node:fs';
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
