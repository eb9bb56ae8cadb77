import { describe } from '../config/config.messages';
import { PREFIX } from '../kernel/resilience.messages';

export const PIPELINE_NAMES_NOTHING = (name: string): string =>
  `${PREFIX}: pipeline '${name}': no retry, circuitBreaker, rateLimiter, timeLimiter or bulkhead instance is declared under '${name}'; ` +
  `declare one, or name each instance: registry.pipeline({ retry: '${name}', ... })`;

export const PIPELINE_HEDGE_NOT_SAFE = (pipeline: string, instance: string): string =>
  `${PREFIX}: pipeline '${pipeline}' would run its function more than once at a time through hedging instance '${instance}', ` +
  `which is not declared safe to repeat: set 'safe: true' on it if running the function twice is harmless`;

export const PIPELINE_UNKNOWN_KEY = (name: string, key: string, known: readonly string[]): string =>
  `${PREFIX}: pipeline '${name}': unknown key '${key}' (known keys: ${known.join(', ')})`;

export const PIPELINE_BAD_LAYER = (name: string, key: string, value: unknown): string =>
  `${PREFIX}: pipeline '${name}': key '${key}' must be an instance name or an options object, got ${describe(value)}`;

export const PIPELINE_BAD_FALLBACK = (name: string, value: unknown): string =>
  `${PREFIX}: pipeline '${name}': each fallback must be { errors: ErrorClass | ErrorClass[], handler: (error) => answer }, got ${describe(value)}`;

export const PIPELINE_BAD_ARGUMENT = (value: unknown): string =>
  `${PREFIX}: registry.pipeline() takes an instance name or an options object, got ${describe(value)}`;
