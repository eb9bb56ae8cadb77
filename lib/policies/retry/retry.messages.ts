import { formatMs } from '../../kernel/format-ms';

/** The first retry-budget denial of an episode. */
export const BUDGET_EXHAUSTED = (name: string): string =>
  `retry '${name}': retry budget exhausted; failing calls are not retried until successes refill it`;

/** An episode of retry-budget denials ended. */
export const BUDGET_RECOVERED = (name: string, denied: number, ms: number): string =>
  `retry '${name}': retry budget no longer denying; ${denied} retries were denied over ${formatMs(ms)} ms`;
