import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/** The markdown files whose code blocks are inventoried: the README and every page of docs/. */
export const DOC_FILES: readonly string[] = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => `docs/${file}`),
];

/** Languages whose blocks are code of the application: each must say whether it runs (`run=<id>`) or not (`fragment`). */
export const PROGRAM_LANGUAGES: readonly string[] = ['ts', 'typescript', 'js', 'javascript', 'mjs', 'cjs'];

/** One fenced block of a markdown file. */
export interface DocBlock {
  /** The markdown file, from the repository root. */
  readonly doc: string;
  /** Line of the opening fence (1-based). */
  readonly line: number;
  /** The language: the first word of the info string. */
  readonly language: string;
  /** The id of `run=<id>`, for a block that runs as written. */
  readonly run: string | undefined;
  /** True for a block marked `fragment`: a piece of a program, type-checked but not run. */
  readonly fragment: boolean;
  /** The rest of the info string, word by word. */
  readonly tags: readonly string[];
  readonly code: string;
}

/** Every fenced block of `doc` (``` fences at the start of a line). */
export function blocksOf(doc: string): DocBlock[] {
  const markdown = readFileSync(join(root, doc), 'utf8');
  const blocks: DocBlock[] = [];
  for (const match of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
    const [language = '', ...tags] = match[1].trim().split(/\s+/);
    const run = tags.find((tag) => tag.startsWith('run='))?.slice('run='.length);
    blocks.push({
      doc,
      line: markdown.slice(0, match.index).split('\n').length,
      language,
      run,
      fragment: tags.includes('fragment'),
      tags,
      code: match[2],
    });
  }
  return blocks;
}

/** Every fenced block of the README and docs/. */
export function docBlocks(): DocBlock[] {
  return DOC_FILES.flatMap(blocksOf);
}

/** The block marked `run=<id>`; throws when there is none. */
export function runnableBlock(id: string): DocBlock {
  const block = docBlocks().find((b) => b.run === id);
  if (block === undefined) throw new Error(`no block of README.md or docs/*.md is marked 'run=${id}'`);
  return block;
}
