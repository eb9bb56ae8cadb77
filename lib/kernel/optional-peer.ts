import { MISSING_PEER } from './resilience.messages';

/**
 * An optional peer dependency: its package name, how to load it, and how
 * to hand the feature what it needs without it being found here.
 */
export interface OptionalPeer<T> {
  readonly name: string;
  /** Requires the package by its literal name, so bundlers see the request and resolve it, or keep it external. */
  readonly load: () => T;
  /** How an application passes the peer's part explicitly, when there is a way. */
  readonly explicitly?: string;
}

/**
 * Loads an optional peer dependency at the moment a feature needs it, so
 * `resilience4nest` itself loads without it. Throws an error naming the
 * package and the feature (and how to pass it explicitly) when it cannot be loaded.
 */
export function loadOptionalPeer<T>(peer: OptionalPeer<T>, feature: string): T {
  try {
    // Loaded here, not imported: an absent optional peer must only fail the feature that needs it.
    return peer.load();
  } catch (error) {
    throw new Error(
      MISSING_PEER(peer.name, feature, error instanceof Error ? error.message : String(error), peer.explicitly),
      { cause: error },
    );
  }
}

/**
 * Loads an optional peer if it is installed; `undefined` when it is absent.
 * An installed peer that fails while loading still throws.
 */
export function tryLoadOptionalPeer<T>(peer: OptionalPeer<T>): T | undefined {
  try {
    return peer.load();
  } catch (error) {
    if (isNotFound(error, peer.name)) return undefined;
    throw error;
  }
}

function isNotFound(error: unknown, peer: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'${peer}'`);
}
