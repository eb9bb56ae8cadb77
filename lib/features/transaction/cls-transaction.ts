import { AsyncLocalStorage } from 'node:async_hooks';
import { OptionalPeer, tryLoadOptionalPeer } from '../../kernel/optional-peer';
import { CLS_TRANSACTION_ENDED } from './transaction.messages';

/** The part of `@nestjs-cls/transactional`'s `TransactionHost` used here. */
export interface TransactionHostLike {
  /** Whether a transaction is active in the current async context. */
  isTransactionActive(): boolean;
  /** The active transaction (the adapter's object), or the adapter's non-transactional fallback. */
  readonly tx: unknown;
  /** Runs `fn` in a transaction: the active one (propagation `Required`), else a new one. */
  withTransaction<R>(fn: () => Promise<R>): Promise<R>;
}

/** Finds a provider anywhere in the application, as Nest's `ModuleRef.get(token, { strict: false })`. */
export interface ProviderLookup {
  /** The provider registered under `token` in any module; throws when there is none. */
  get(token: unknown, options: { strict: false }): unknown;
}

const CLS_TRANSACTIONAL: OptionalPeer<{ TransactionHost: abstract new (...args: never[]) => TransactionHostLike }> = {
  name: '@nestjs-cls/transactional',
  // Loaded on first use, never imported: an absent optional peer fails only the feature that needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@nestjs-cls/transactional'),
};

/**
 * The application's default `TransactionHost` of `@nestjs-cls/transactional`;
 * `undefined` when the package is not installed or not configured here.
 */
export function findTransactionHost(providers: ProviderLookup | undefined): TransactionHostLike | undefined {
  const peer = tryLoadOptionalPeer(CLS_TRANSACTIONAL);
  if (peer === undefined || providers === undefined) return undefined;
  try {
    return providers.get(peer.TransactionHost, { strict: false }) as TransactionHostLike;
  } catch {
    // Installed but not configured in this application: no such transaction to join.
    return undefined;
  }
}

/** What the callback hands out once the transaction is open. */
interface Opened {
  readonly tx: unknown;
  readonly inside: <R>(fn: () => R) => R;
}

/** Thrown inside the held transaction's callback to have the adapter roll it back. */
class RollBack extends Error {}

/**
 * A transaction of a `TransactionHost` held open across calls: the host's
 * `withTransaction` callback waits until {@link HeldClsTransaction.commit}
 * or {@link HeldClsTransaction.rollback} decides, so the adapter (pg,
 * TypeORM, Drizzle, …) begins and ends it as it always does. When a
 * transaction is already active, the host joins it (propagation
 * `Required`): it then commits or rolls back with the outer one.
 */
export class HeldClsTransaction {
  /**
   * Opens (or joins) a transaction of `host`.
   *
   * @param who - what asks, for messages
   */
  static async open(host: TransactionHostLike, who: string): Promise<HeldClsTransaction> {
    let decide!: (commit: boolean) => void;
    const decision = new Promise<boolean>((resolve) => (decide = resolve));
    let entered!: (opened: Opened) => void;
    const inside = new Promise<Opened>((resolve) => (entered = resolve));
    const ended = host.withTransaction(async () => {
      // The callback's async context is where the host sees this transaction: keep a way back into it.
      entered({ tx: host.tx, inside: AsyncLocalStorage.snapshot() });
      if (!(await decision)) throw new RollBack('rolled back by its holder');
    });
    const opened = await Promise.race([
      inside,
      ended.then((): never => {
        throw new Error(CLS_TRANSACTION_ENDED(who));
      }),
    ]);
    return new HeldClsTransaction(opened.tx, opened.inside, decide, ended);
  }

  private constructor(
    /** The adapter's transaction, as `TransactionHost.tx` gives it inside. */
    readonly tx: unknown,
    private readonly inside: <R>(fn: () => R) => R,
    private readonly decide: (commit: boolean) => void,
    private readonly ended: Promise<void>,
  ) {}

  /** Runs `fn` where the host sees this transaction as the active one. */
  enter<R>(fn: () => R): R {
    return this.inside(fn);
  }

  /** Lets the adapter commit; rejects when the commit failed (the transaction is then rolled back). */
  async commit(): Promise<void> {
    this.decide(true);
    await this.ended;
  }

  /** Lets the adapter roll back; rejects only when the rollback itself failed. */
  async rollback(): Promise<void> {
    this.decide(false);
    try {
      await this.ended;
    } catch (error) {
      if (!(error instanceof RollBack)) throw error;
    }
  }
}
