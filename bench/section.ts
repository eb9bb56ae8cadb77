/**
 * One part of `npm run bench`, runnable alone as `npm run bench -- <name>`.
 * To add one: write `bench/<name>.ts` exporting a `BenchSection`, and list
 * it in `SECTIONS` in `bench/index.ts`.
 */
export interface BenchSection {
  /** The command-line name (`npm run bench -- overhead`). */
  readonly name: string;
  /** One line for the usage text. */
  readonly summary: string;
  /** Measures and prints; throws only when the thing measured did not behave (never on a timing). */
  run(): Promise<void>;
}
