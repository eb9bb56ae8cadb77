import { formatMs } from '../../kernel/format-ms';

/** The first bulkhead rejection of an episode. */
export const BULKHEAD_SATURATED = (name: string, maxConcurrentCalls: number, reason: string): string =>
  `bulkhead '${name}' saturated: all ${maxConcurrentCalls} permits taken, calls are rejected (first: ${reason})`;

/** An episode of bulkhead rejections ended. */
export const BULKHEAD_RECOVERED = (name: string, rejected: number, ms: number): string =>
  `bulkhead '${name}' no longer saturated; ${rejected} calls were rejected over ${formatMs(ms)} ms`;
