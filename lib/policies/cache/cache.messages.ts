import { PREFIX } from '../../kernel/resilience.messages';

/** A cache store failed: logged once per episode, the call going on as a miss. */
export const CACHE_STORE_FAILED = (name: string, error: unknown): string =>
  `${PREFIX}: cache '${name}': its store failed (${error instanceof Error ? error.message : String(error)}); ` +
  `calls go through as misses, without the stored answers, until it answers again`;

/** A cache store answered again after failing. */
export const CACHE_STORE_RECOVERED = (name: string): string => `${PREFIX}: cache '${name}': its store answers again`;
