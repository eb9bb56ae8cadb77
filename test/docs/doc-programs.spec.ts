import { DocBlock, docBlocks, PROGRAM_LANGUAGES } from '../support/doc-blocks';
import { asJson, CommonJsPrograms, EsModulePrograms, ProgramResult } from '../support/run-doc-program';
import { DOC_PROGRAMS, ProcessProgram } from './doc-programs';

/*
 * Every code block of README.md and docs/*.md says what it is, in its info string:
 * - ```ts run=<id>: a complete program or test (an application module, an entry point, a
 *   function or test that needs nothing the page does not give). It runs as written, driven by
 *   DOC_PROGRAMS[id] of ./doc-programs.ts, twice: as CommonJS and as an ES module, each in a
 *   Node process of its own against the built package (in Jest's own module system, NestJS 12's
 *   ES-module-only packages cannot load their adapters and transports);
 * - ```ts fragment: a piece of a program (a provider without the module that provides it, a
 *   function taking the application's objects, another tool's config file). The `ts` ones are
 *   type-checked by the docs-snippets specs.
 */
const blocks = docBlocks();
const programs = blocks.filter((b): b is DocBlock & { run: string } => b.run !== undefined);
const where = (b: DocBlock): string => `${b.doc}:${b.line}`;
const modulePrograms = programs.filter((b) => DOC_PROGRAMS[b.run]?.kind === 'module');
const processPrograms = programs.filter((b) => DOC_PROGRAMS[b.run]?.kind === 'process');

describe('code blocks of README.md and docs/*.md', () => {
  it('each block of code says whether it runs as written (run=<id>) or is a fragment, and only one', () => {
    const unmarked = blocks
      .filter((b) => PROGRAM_LANGUAGES.includes(b.language))
      .filter((b) => (b.run === undefined) === !b.fragment)
      .map(where);
    expect(unmarked).toEqual([]);
    const marked = blocks.filter((b) => !PROGRAM_LANGUAGES.includes(b.language) && (b.run || b.fragment));
    expect(marked.map(where)).toEqual([]);
  });

  it('each block that runs has an id of its own and a driver, and each driver a block', () => {
    const ids = programs.map((b) => b.run);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(programs.filter((b) => DOC_PROGRAMS[b.run] === undefined).map((b) => `${where(b)} run=${b.run}`)).toEqual(
      [],
    );
    expect(Object.keys(DOC_PROGRAMS).filter((id) => !ids.includes(id))).toEqual([]);
  });
});

describe.each([
  ['in CommonJS (Node with ts-node)', () => new CommonJsPrograms()],
  ['as ES modules', () => new EsModulePrograms()],
])('blocks that run, as written, %s, against the built package', (_system, make) => {
  // Made in a hook, so a run that filters every test of the group out leaves no folder behind.
  let programs: CommonJsPrograms | EsModulePrograms;
  let results: Record<string, ProgramResult>;
  beforeAll(async () => {
    programs = make();
    results = await programs.runModules(modulePrograms);
  }, 600_000);
  afterAll(() => programs.remove());

  it.each(modulePrograms.map((b) => [b.run, where(b)] as const))('%s (%s)', (id) => {
    expect(results[id]).toEqual({ answer: DOC_PROGRAMS[id].answer });
  });

  it.each(processPrograms.map((b) => [b.run, where(b), b] as const))(
    '%s (%s)',
    async (id, _where, block) => {
      const program = DOC_PROGRAMS[id] as ProcessProgram;
      expect(asJson(await program.run(await programs.start(block)))).toEqual(program.answer);
    },
    120_000,
  );
});
