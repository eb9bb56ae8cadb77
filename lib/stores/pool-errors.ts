import { PREFIX } from '../kernel/resilience.messages';

/** What a store does with a message about its pool: by default a Node process warning. */
export type StoreWarn = (message: string) => void;

/** The default {@link StoreWarn}: `process.emitWarning`, which Node prints once on stderr. */
export const processWarning: StoreWarn = (message) => process.emitWarning(message);

/** The part of a `pg` `Pool` that reports its connections' failures. */
interface ErrorEmittingPool {
  readonly totalCount: number;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'connect', listener: () => void): unknown;
}

export const POOL_CONNECTION_FAILED = (store: string, error: Error): string =>
  `${PREFIX}: ${store}: a connection of its pg pool failed (${error.message}); the pool drops it and opens another ` +
  `when needed. Not logged again until the pool connects anew`;

/**
 * Listens for the `error` a `pg` `Pool` emits when one of its idle
 * connections fails (a restart, `pg_terminate_backend`, a network cut): an
 * EventEmitter with no listener throws it, which ends the process. Logs it
 * once per episode, until the pool next opens a connection. A client (not
 * a pool) is left alone: its errors belong to whoever checked it out.
 */
export function listenForPoolErrors(pool: unknown, store: string, warn: StoreWarn): void {
  const candidate = pool as Partial<ErrorEmittingPool> | null;
  if (candidate === null || typeof candidate.on !== 'function' || typeof candidate.totalCount !== 'number') return;
  let failing = false;
  candidate.on('error', (error: Error) => {
    if (failing) return;
    failing = true;
    warn(POOL_CONNECTION_FAILED(store, error));
  });
  candidate.on('connect', () => {
    failing = false;
  });
}
