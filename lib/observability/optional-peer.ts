import { MISSING_PEER } from './observability.messages';

/**
 * Loads an optional peer dependency at the moment a feature needs it, so
 * `resilience4nest` itself loads without it. Throws an error naming the
 * package and the feature when it cannot be loaded.
 */
export function loadOptionalPeer<T>(peer: string, feature: string): T {
  try {
    // A runtime require, not an import: an absent optional peer must only fail the feature that needs it.
    return require(peer) as T;
  } catch (error) {
    throw new Error(MISSING_PEER(peer, feature, error instanceof Error ? error.message : String(error)));
  }
}

/**
 * Loads an optional peer if it is installed; `undefined` when it is absent.
 * An installed peer that fails while loading still throws.
 */
export function tryLoadOptionalPeer<T>(peer: string): T | undefined {
  try {
    return require(peer) as T;
  } catch (error) {
    if (isNotFound(error, peer)) return undefined;
    throw error;
  }
}

function isNotFound(error: unknown, peer: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'${peer}'`);
}
