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

/** The pools watched, each with the store kinds on it and the warn of the first store of each kind. */
const watched = new WeakMap<object, Map<string, StoreWarn>>();

/**
 * Listens for the `error` a `pg` `Pool` emits when one of its idle
 * connections fails (a restart, `pg_terminate_backend`, a network cut): an
 * EventEmitter with no listener throws it, which ends the process. Logs it
 * once per episode, until the pool next opens a connection, for each kind
 * of store on the pool, through the `warn` of the first store of that
 * kind. However many stores share a pool, it gets one listener of each
 * event. A client (not a pool) is left alone: its errors belong to
 * whoever checked it out.
 */
export function listenForPoolErrors(pool: unknown, store: string, warn: StoreWarn): void {
  const candidate = pool as Partial<ErrorEmittingPool> | null;
  if (candidate === null || typeof candidate.on !== 'function' || typeof candidate.totalCount !== 'number') return;
  const known = watched.get(candidate);
  if (known !== undefined) {
    if (!known.has(store)) known.set(store, warn);
    return;
  }
  const stores = new Map([[store, warn]]);
  watched.set(candidate, stores);
  let failing = false;
  candidate.on('error', (error: Error) => {
    if (failing) return;
    failing = true;
    for (const [name, warnOf] of stores) warnOf(POOL_CONNECTION_FAILED(name, error));
  });
  candidate.on('connect', () => {
    failing = false;
  });
}
