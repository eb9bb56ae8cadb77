import { DOCUMENT_CONTAINS_ITSELF, DOCUMENT_TOO_DEEP, DOCUMENT_TOO_LARGE, TEXT_TOO_DEEP } from './config.messages';
import { isPlainObject } from './plain-object';

/** What messages name as the source of a document read by `fromSpringConfig`. */
const SPRING_FILE = 'fromSpringConfig';

/** The most characters `fromSpringConfig` reads: of the text, or of the keys and text values of an object. */
export const MAX_DOCUMENT_LENGTH = 1_048_576;

/** The most keys and list items `fromSpringConfig` reads in an object (a map or list shared by aliases counted once). */
export const MAX_DOCUMENT_ENTRIES = 100_000;

/** The deepest `fromSpringConfig` reads: keys on one path from the root, each segment of a dotted key counted. */
export const MAX_DOCUMENT_DEPTH = 64;

/** Refuses text beyond {@link MAX_DOCUMENT_LENGTH} before anything parses it. */
export function checkDocumentText(text: string): void {
  if (text.length > MAX_DOCUMENT_LENGTH)
    throw new Error(
      DOCUMENT_TOO_LARGE(SPRING_FILE, `${text.length} characters`, MAX_DOCUMENT_LENGTH, MAX_DOCUMENT_ENTRIES),
    );
}

/**
 * Refuses YAML text nested deeper than {@link MAX_DOCUMENT_DEPTH} before a
 * parser reads it, as a parser recurses once per level. One pass counts,
 * on each line, the indentation levels open, its leading `- ` items and the
 * `[` and `{` open there; brackets inside quoted text count too, so the
 * count errs on the deep side.
 */
export function checkYamlNesting(text: string): void {
  const indents: number[] = [];
  let flow = 0;
  let line = 0;
  for (let start = 0; start <= text.length; line++) {
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline;
    let at = start;
    while (at < end && text.charCodeAt(at) === 0x20) at++;
    if (at < end && text[at] !== '#' && text[at] !== '\r') {
      const width = at - start;
      if (flow === 0) {
        while (indents.length > 0 && indents[indents.length - 1] > width) indents.pop();
        if (indents.length === 0 || indents[indents.length - 1] < width) indents.push(width);
      }
      let items = 0;
      for (; at < end && text[at] === '-' && (at + 1 === end || text[at + 1] === ' '); at += 2) items++;
      for (; at < end && indents.length + items + flow <= MAX_DOCUMENT_DEPTH; at++) {
        const c = text[at];
        if (c === '[' || c === '{') flow++;
        else if ((c === ']' || c === '}') && flow > 0) flow--;
      }
      if (indents.length + items + flow > MAX_DOCUMENT_DEPTH)
        throw new Error(TEXT_TOO_DEEP(line + 1, MAX_DOCUMENT_DEPTH));
    }
    start = end + 1;
  }
}

/**
 * Refuses a parsed document (or module options) beyond the size cap or
 * nesting limit, or one that contains itself, with an error naming where. Each map and list is
 * walked once however often it is shared (YAML aliases), and no deeper
 * than the limit, so the check is linear in the document's distinct parts
 * and cannot overflow the stack.
 */
export function checkDocument(document: unknown, source = SPRING_FILE): void {
  new DocumentCheck(source).levelsBelow(document, '', 0);
}

class DocumentCheck {
  /** Levels of keys below each map or list walked (its height), so a shared one is walked once. */
  private readonly heights = new Map<object, number>();
  /** The maps and lists on the path being walked: meeting one again means it contains itself. */
  private readonly open = new Set<object>();
  private entries = 0;
  private characters = 0;

  /** @param source - what messages name the document (`fromSpringConfig`, `module options`) */
  constructor(private readonly source: string) {}

  levelsBelow(node: unknown, path: string, depth: number): number {
    if (typeof node === 'string') {
      this.count(0, node.length);
      return 0;
    }
    if (!Array.isArray(node) && !isPlainObject(node)) return 0;
    const known = this.heights.get(node);
    if (known !== undefined) {
      if (depth + known > MAX_DOCUMENT_DEPTH) throw new Error(DOCUMENT_TOO_DEEP(this.source, path, MAX_DOCUMENT_DEPTH));
      return known;
    }
    if (this.open.has(node)) throw new Error(DOCUMENT_CONTAINS_ITSELF(this.source, path));
    this.open.add(node);
    let height = 0;
    if (Array.isArray(node)) {
      this.count(node.length, 0);
      if (node.length > 0 && depth + 1 > MAX_DOCUMENT_DEPTH)
        throw new Error(DOCUMENT_TOO_DEEP(this.source, path, MAX_DOCUMENT_DEPTH));
      for (let i = 0; i < node.length; i++)
        height = Math.max(height, 1 + this.levelsBelow(node[i], `${path}[${i}]`, depth + 1));
    } else {
      for (const key of Object.keys(node)) {
        this.count(1, key.length);
        const levels = segmentCount(key);
        const where = path === '' ? key : `${path}.${key}`;
        if (depth + levels > MAX_DOCUMENT_DEPTH)
          throw new Error(DOCUMENT_TOO_DEEP(this.source, path === '' ? where : path, MAX_DOCUMENT_DEPTH));
        height = Math.max(height, levels + this.levelsBelow(node[key], where, depth + levels));
      }
    }
    this.open.delete(node);
    this.heights.set(node, height);
    return height;
  }

  private count(entries: number, characters: number): void {
    this.entries += entries;
    this.characters += characters;
    if (this.entries > MAX_DOCUMENT_ENTRIES)
      throw new Error(
        DOCUMENT_TOO_LARGE(
          this.source,
          `more than ${MAX_DOCUMENT_ENTRIES} keys and list items`,
          MAX_DOCUMENT_LENGTH,
          MAX_DOCUMENT_ENTRIES,
        ),
      );
    if (this.characters > MAX_DOCUMENT_LENGTH)
      throw new Error(
        DOCUMENT_TOO_LARGE(
          this.source,
          `more than ${MAX_DOCUMENT_LENGTH} characters of keys and text`,
          MAX_DOCUMENT_LENGTH,
          MAX_DOCUMENT_ENTRIES,
        ),
      );
  }
}

/** The levels a key adds: one per dotted segment and per `[...]` (at most; a bracketed name may hold dots). */
function segmentCount(key: string): number {
  let levels = 1;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 0x2e /* . */ || c === 0x5b /* [ */) levels++;
  }
  return levels;
}
