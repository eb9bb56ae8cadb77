import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { bindErrorNames, ErrorMatcher } from '../../config/error-matcher';
import { JAVA_ERROR_NAMES } from '../../spring/exceptions/java-exceptions';
import { EventStream, EventSubscriber } from '../../kernel/events';
import { TrampolineInfo } from '../../decorators/metadata';
import { NEST_PATH_METADATA } from './nest-route-metadata';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { findTransactionHost, ProviderLookup, TransactionHostLike } from '../transaction/cls-transaction';
import { IdempotencyStore } from './idempotency-store';
import {
  KEY_ON_ROUTE,
  KEY_REQUIRED,
  PRINCIPAL_NOT_ON_ROUTE,
  PRINCIPAL_REQUIRED,
  STORE_NOT_TRANSACTIONAL,
} from './idempotency.messages';
import {
  CheckedIdempotentOptions,
  resolveIdempotencyOptions,
  ResolvedIdempotencyOptions,
  storeName,
} from './idempotency.options';
import { IdempotentMethod } from './idempotent-method';
import { DEFAULT_RELEASE_ON, IdempotencyOutcome, IdempotencyTransport } from './idempotent-target';
import { MemoryIdempotencyStore } from './memory-idempotency-store';
import { isTransactionalStore } from './transactional-store';
import { boundedStoreCall } from './store-call';

/** One request or call through an `@Idempotent` method, and what became of it. */
export interface IdempotencyOutcomeEvent {
  /** What happened (label of `resilience4nest_idempotency_requests_total`). */
  readonly outcome: IdempotencyOutcome;
  /** `Class.method` of the protected method. */
  readonly name: string;
  /** An HTTP request, or a call keyed by the `key` option. */
  readonly transport: IdempotencyTransport;
  /** The client's key, when a valid one was given. */
  readonly key?: string;
  /** The error behind the outcome, when there is one (the method's, a store's or a reconciler's). */
  readonly error?: unknown;
}

/**
 * The idempotency settings, the store and the per-method layers of one
 * application. Injectable in Nest (`IdempotencyRegistry`); without Nest,
 * `new IdempotencyRegistry(new ResilienceRegistry({ idempotency: { ... } }))`.
 */
export class IdempotencyRegistry implements OnApplicationBootstrap, OnModuleDestroy {
  /**
   * The module's `idempotency` section, validated.
   *
   * @internal
   */
  readonly options: ResolvedIdempotencyOptions;
  private readonly events = new EventStream<IdempotencyOutcomeEvent>();
  private readonly methods = new Map<TrampolineInfo, IdempotentMethod>();

  /** One event per request or call through an `@Idempotent` method. */
  readonly onOutcome: EventSubscriber<IdempotencyOutcomeEvent> = this.events.subscribe;

  private transactionHost: { readonly found: TransactionHostLike | undefined } | undefined;

  /**
   * @param resilience - the application's registry: its module options, clock and warnings
   * @param providers - where to find the `@nestjs-cls/transactional` `TransactionHost` (Nest's `ModuleRef`)
   */
  constructor(
    private readonly resilience: ResilienceRegistry,
    private readonly providers?: ProviderLookup,
  ) {
    this.options = resolveIdempotencyOptions(resilience.options.extras.idempotency, resilience.clock);
  }

  /** Logs the store's durability warning, if it has one (bounded by `storeTimeout`; a store that cannot tell says nothing). */
  async onApplicationBootstrap(): Promise<void> {
    const { store } = this.options;
    if (store.durabilityWarning === undefined) return;
    const bounds = { clock: this.resilience.clock, storeTimeoutMs: this.options.storeTimeoutMs };
    const warning = await boundedStoreCall(
      bounds,
      storeName(store),
      'durability check',
      () => store.durabilityWarning?.() ?? Promise.resolve(undefined),
      false,
    ).catch(() => undefined);
    if (warning !== undefined) this.resilience.warnOnce(warning);
  }

  /** Stops a memory store's sweep timer: its keys die with the application anyway. */
  onModuleDestroy(): void {
    const { store } = this.options;
    if (store instanceof MemoryIdempotencyStore) store.close();
  }

  /** The store every `@Idempotent` method uses. */
  get store(): IdempotencyStore {
    return this.options.store;
  }

  /**
   * The layer of one decorated method, made at bootstrap. Checks what can
   * be checked before the first request: a route takes its key from the
   * header and needs a principal choice, any other method needs `key`, and
   * transactional mode needs a store that takes part in transactions.
   *
   * @param info - the method's trampoline
   * @param options - the decorator's validated options
   * @param method - the method as found on the prototype (carries the route metadata)
   *
   * @internal
   */
  policyFor(info: TrampolineInfo, options: CheckedIdempotentOptions, method: unknown): IdempotentMethod {
    const name = info.target;
    const route = typeof method === 'function' && Reflect.getMetadata(NEST_PATH_METADATA, method) !== undefined;
    if (route && options.key !== undefined) throw new Error(KEY_ON_ROUTE(name, 'key'));
    if (route && options.fingerprint !== undefined) throw new Error(KEY_ON_ROUTE(name, 'fingerprint'));
    if (!route && options.key === undefined) throw new Error(KEY_REQUIRED(name));
    if (!route && options.principal !== undefined) throw new Error(PRINCIPAL_NOT_ON_ROUTE(name));
    const principal = options.principal ?? this.options.principal;
    if (route && principal === undefined) throw new Error(PRINCIPAL_REQUIRED(name));
    const { store, ttlMs, leaseMs, storeTimeoutMs, reconciler } = this.options;
    if (options.transactional && !isTransactionalStore(store))
      throw new Error(STORE_NOT_TRANSACTIONAL(name, storeName(store)));
    const lease = options.leaseMs ?? leaseMs;
    const layer = new IdempotentMethod(
      name,
      {
        ...options,
        store,
        clock: this.resilience.clock,
        leaseMs: lease,
        ttlMs: Math.max(options.ttlMs ?? ttlMs, lease),
        storeTimeoutMs,
        releaseOn: new ErrorMatcher(bindErrorNames(options.releaseOn ?? DEFAULT_RELEASE_ON, JAVA_ERROR_NAMES)),
        reconciler: options.reconciler ?? reconciler,
        principal,
        route,
        principalSource:
          options.principal !== undefined
            ? `option 'principal' of @Idempotent on ${name}`
            : 'the module option idempotency.principal',
        transactionHost: () => this.findTransactionHost(),
      },
      (outcome, from, transport, key, error) => this.emit(outcome, from, transport, key, error),
      (message) => this.resilience.warnOnce(message),
    );
    this.methods.set(info, layer);
    return layer;
  }

  /** Looked up at the first transactional run, once every provider of the application exists. */
  private findTransactionHost(): TransactionHostLike | undefined {
    this.transactionHost ??= { found: findTransactionHost(this.providers) };
    return this.transactionHost.found;
  }

  /**
   * The layer made for a method at bootstrap, if any.
   *
   * @internal
   */
  methodOf(info: TrampolineInfo): IdempotentMethod | undefined {
    return this.methods.get(info);
  }

  /**
   * Reports one outcome to the subscribers of {@link IdempotencyRegistry.onOutcome}.
   *
   * @internal
   */
  emit(
    outcome: IdempotencyOutcome,
    method: IdempotentMethod,
    transport: IdempotencyTransport,
    key?: string,
    error?: unknown,
  ): void {
    if (!this.events.active) return;
    this.events.emit({
      outcome,
      name: method.name,
      transport,
      ...(key === undefined ? {} : { key }),
      ...(error === undefined ? {} : { error }),
    });
  }
}
