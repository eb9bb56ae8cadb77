import { from, lastValueFrom, Observable } from 'rxjs';
import { Clock, systemClock } from '../../kernel/clock';
import { isCancellation } from '../../kernel/cancellation';
import { EventStream, EventSubscriber } from '../../kernel/events';
import { changedSettings, ConfigChangedEvent, publishConfigChange } from '../../kernel/config-change';
import { EventTap, InstanceSnapshot, SpanEventSink, tapStream } from '../../kernel/telemetry';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { Policy } from '../../kernel/policy';
import { Unsubscribe } from '../../kernel/events';
import { isThenable } from '../../kernel/thenable';
import { CacheConfig } from './cache.config';
import { CacheEntry, CacheStore, MemoryCacheStore } from './cache-store';
import { CacheResult, CacheResultEvent } from './cache.events';
import { CACHE_STORE_FAILED, CACHE_STORE_RECOVERED } from './cache.messages';

/** Counters of a cache instance: calls by how they were answered. */
export interface CacheMetrics {
  /** Answered by a stored answer younger than `ttl`, without calling. */
  hit: number;
  /** Called through (the outcome, success or error, was the answer). */
  miss: number;
  /** Failed, and answered by the last known good within `staleIfError`. */
  stale: number;
  /** Shared the outcome of a concurrent call with the same key. */
  coalesced: number;
}

/** The event type each result is published under on the telemetry channel. */
const EVENT_TYPES: Readonly<Record<CacheResult, string>> = {
  hit: 'CACHE_HIT',
  miss: 'CACHE_MISS',
  stale: 'STALE_ANSWER',
  coalesced: 'COALESCED',
};

const NO_ARGS: unknown[] = [];

/** What a call reads of its cache's settings, made once per change so that a call runs under one of them from start to end. */
interface Setup {
  readonly config: CacheConfig;
  readonly store: CacheStore;
  /** Keys are prefixed with the instance name in a store shared with other instances. */
  readonly prefix: string;
  /** How long the store must keep an answer: as long as it may answer, fresh or stale. */
  readonly keepMs: number;
  readonly keyOf: (...args: unknown[]) => string;
}

/** The setup of `config` for instance `name`; `memory`: the in-process store it keeps, resized to `config`. */
function setupOf(name: string, config: CacheConfig, memory?: MemoryCacheStore): Setup {
  memory?.resize(config.maxEntries);
  return {
    config,
    store: config.store ?? memory ?? new MemoryCacheStore(config.maxEntries),
    prefix: config.store === undefined ? '' : `${name}:`,
    keepMs: Math.max(config.ttl, config.staleIfError ?? 0),
    keyOf: config.key ?? jsonKey,
  };
}

/**
 * The default key: the JSON of the arguments. A single string or number
 * argument, the common case, is keyed without `JSON.stringify` (a tagged
 * copy, which no JSON array can equal), since the key is made on every call.
 */
function jsonKey(...args: unknown[]): string {
  if (args.length === 1) {
    const only = args[0];
    if (typeof only === 'string') return `s:${only}`;
    if (typeof only === 'number') return `n:${only}`;
  }
  return JSON.stringify(args);
}

/**
 * Serves stored answers: while younger than `ttl` without calling; when a
 * call fails, the last known good while younger than `staleIfError`,
 * through `mark`. Concurrent calls with one key share one call when
 * `coalesce` is on. Only successful answers are stored: an error or a
 * refusal never is, and an answer that is not there (a cold start) or too
 * old is never invented, the call failing with its own error. A caller's
 * own cancellation is never answered from the store.
 *
 * Placed outside the retry and inside the fallback: the retry's attempts
 * are one call to the cache, and a fallback answers only when the cache had
 * nothing fit to answer with.
 *
 * Its settings change while it runs through `registry.reconfigure('cache', name, patch)`
 * and `registry.applyOptions`: a call runs under the settings in force when it started.
 */
export class CachePolicy {
  private readonly counters: CacheMetrics = { hit: 0, miss: 0, stale: 0, coalesced: 0 };
  private readonly results = new EventStream<CacheResultEvent>();
  private readonly configStream = new EventStream<ConfigChangedEvent<CacheConfig>>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  private setup: Setup;
  private readonly wallOffset: number;
  private storeFailing = false;

  /** A call was answered (see {@link CacheResultEvent}). */
  readonly onResult = this.results.subscribe;
  /** Its settings changed (`CONFIG_CHANGED`). */
  readonly onConfigChanged: EventSubscriber<ConfigChangedEvent<CacheConfig>> = this.configStream.subscribe;

  /**
   * @param name - instance name
   * @param config - resolved settings
   * @param clock - time source for ages
   * @param log - receives a line when the store starts failing and when it answers again
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    config: CacheConfig,
    /** The time source for the answers' ages. */
    readonly clock: Clock,
    private readonly log: (message: string) => void,
  ) {
    this.setup = setupOf(name, config);
    // The system clock is monotonic and per process; a stored time must mean the same to the next process.
    this.wallOffset = clock === systemClock ? performance.timeOrigin : 0;
  }

  /** The resolved settings in force (durations in ms). */
  get config(): CacheConfig {
    return this.setup.config;
  }

  /**
   * @internal Runs with `config` from calls that start now on; a call under
   * way ends under the settings it started with. What is stored stays: the
   * in-process store keeps its answers (its least recently used evicted
   * down to a lower `maxEntries`), and a store given anew is read and
   * written from the next call (the answers of the one before are not
   * moved). An answer is stored for the longest it may answer under the
   * settings of the call that stored it. Publishes `CONFIG_CHANGED`;
   * returns its event, or undefined when nothing differs.
   */
  reconfigure(config: CacheConfig): ConfigChangedEvent<CacheConfig> | undefined {
    const before = this.setup;
    const changed = changedSettings(before.config, config);
    if (changed.length === 0) return undefined;
    const keepsMemory = before.config.store === undefined && config.store === undefined;
    this.setup = setupOf(this.name, config, keepsMemory ? (before.store as MemoryCacheStore) : undefined);
    return publishConfigChange(this.configStream, 'cache', this, before.config, config, changed);
  }

  /** A snapshot of the counters. */
  get metrics(): CacheMetrics {
    return { ...this.counters };
  }

  /** Calls waiting on a shared call now (the leaders). */
  get inFlight(): number {
    return this.inflight.size;
  }

  /** @internal The telemetry channel: each result under its event type, and the settings and counters. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const listeners = new Map<CacheResult, (event: object) => void>();
    for (const [result, type] of Object.entries(EVENT_TYPES) as [CacheResult, string][]) {
      const listener = tap(type);
      if (listener !== undefined) listeners.set(result, listener);
    }
    const into: Unsubscribe[] = [];
    if (listeners.size > 0) into.push(this.results.subscribe((event) => listeners.get(event.result)?.(event)));
    tapStream(into, tap, 'CONFIG_CHANGED', this.onConfigChanged);
    return into;
  }

  /** @internal See {@link CachePolicy.tapEvents}. */
  snapshot(): InstanceSnapshot {
    const store = this.config.store;
    // The store by its class name: it holds a client, which is no setting to show.
    return {
      config: { ...this.config, store: store === undefined ? 'memory' : (store.constructor?.name ?? 'custom') },
      metrics: { ...this.metrics, inFlight: this.inflight.size },
    };
  }

  /** @internal Its span events: each answer from the store, fresh (`hit`) or the last known good (`stale`), with its age. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onResult(({ name, result, ageMs }) => {
        if (result !== 'hit' && result !== 'stale') return;
        trace.event(result === 'hit' ? E.cacheHit : E.cacheStale, {
          [A.policy]: 'cache',
          [A.instance]: name,
          [A.cacheResult]: result,
          [A.cacheAgeMs]: ageMs,
        });
      }),
    ];
  }

  /**
   * @internal Counts the calls through it and its stale answers, which are
   * degraded answers as a fallback's are. A call of a method or pipeline
   * with a fallback is left to the fallback's count, its stale answer too
   * (reported through the fallback policy).
   */
  countAnswers(onCall: () => void, onDegraded: () => void): Unsubscribe {
    return this.onResult(({ result, guarded }) => {
      if (guarded) return;
      onCall();
      if (result === 'stale') onDegraded();
    });
  }

  /** @internal Runs `next(args)` under the cache, keyed by `args` (a decorated method's arguments). */
  call<A, R>(next: (arg: A) => R | PromiseLike<R>, args: A): Promise<R> {
    return this.lookup(next, args, args as unknown as unknown[], undefined);
  }

  /** @internal Each subscription of `source` under the cache, keyed by `args`: its last value is the answer stored. */
  observe<T>(source: Observable<T>, args: unknown[]): Observable<T> {
    return this.observeUnder(source, args, undefined);
  }

  /**
   * @internal The cache as one method's or pipeline's layer: keyed by the
   * method's arguments, or by `key()` for a pipeline (`withoutArgs`), its
   * function taking none. Under a fallback (`onStale` given) the fallback
   * counts the calls, and each stale answer is reported to it.
   */
  layer(withoutArgs: boolean, onStale: (() => void) | undefined): Policy {
    if (!withoutArgs && onStale === undefined) return this;
    return {
      name: this.name,
      call: (next, arg) => this.lookup(next, arg, withoutArgs ? NO_ARGS : (arg as unknown[]), onStale),
      observe: (source, args) => this.observeUnder(source, withoutArgs ? NO_ARGS : args, onStale),
    };
  }

  private observeUnder<T>(source: Observable<T>, args: unknown[], onStale: (() => void) | undefined): Observable<T> {
    return new Observable<T>((subscriber) =>
      from(this.lookup(lastOf, source, args, onStale) as Promise<T>).subscribe(subscriber),
    );
  }

  private lookup<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    keyArgs: unknown[],
    onStale: (() => void) | undefined,
  ): Promise<R> {
    const setup = this.setup;
    let key: string;
    try {
      key = setup.prefix + setup.keyOf(...keyArgs);
    } catch (error) {
      return Promise.reject(error);
    }
    if (setup.config.ttl <= 0) return this.miss(setup, next, arg, key, onStale);
    const stored = this.read(setup, key);
    if (isThenable(stored))
      return Promise.resolve(stored).then((entry) => this.fromEntry(setup, next, arg, key, entry, onStale));
    return this.fromEntry(setup, next, arg, key, stored, onStale);
  }

  private fromEntry<A, R>(
    setup: Setup,
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    key: string,
    entry: CacheEntry | undefined,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    if (entry !== undefined) {
      const ageMs = this.now() - entry.asOf;
      if (ageMs < setup.config.ttl) {
        this.count('hit', onStale, ageMs);
        return Promise.resolve(entry.value as R);
      }
    }
    return this.miss(setup, next, arg, key, onStale);
  }

  /** Calls through (or joins the call in flight for `key`, when coalescing); stores a success, answers stale on a failure. */
  private miss<A, R>(
    setup: Setup,
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    key: string,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    if (setup.config.coalesce) {
      const shared = this.inflight.get(key) as Promise<R> | undefined;
      if (shared !== undefined)
        return shared.then(
          (value) => {
            this.count('coalesced', onStale);
            return value;
          },
          (error: unknown) => this.failed(setup, key, error, 'coalesced', onStale),
        );
    }
    let pending: R | PromiseLike<R>;
    try {
      pending = next(arg);
    } catch (error) {
      pending = Promise.reject(error);
    }
    const outcome = Promise.resolve(pending).then((value) => {
      this.write(setup, key, value);
      return value;
    });
    if (setup.config.coalesce) {
      this.inflight.set(key, outcome);
      const done = (): void => {
        if (this.inflight.get(key) === outcome) this.inflight.delete(key);
      };
      outcome.then(done, done);
    }
    return outcome.then(
      (value) => {
        this.count('miss', onStale);
        return value;
      },
      (error: unknown) => this.failed(setup, key, error, 'miss', onStale),
    );
  }

  /** A call failed with `error`: the last known good when one is young enough, else the error. */
  private failed<R>(
    setup: Setup,
    key: string,
    error: unknown,
    otherwise: CacheResult,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    const shelfLife = setup.config.staleIfError;
    if (shelfLife === undefined || isCancellation(error)) {
      this.count(otherwise, onStale);
      return Promise.reject(error);
    }
    const stored = this.read(setup, key);
    const answer = (entry: CacheEntry | undefined): R => {
      const ageMs = entry === undefined ? Infinity : this.now() - entry.asOf;
      if (ageMs > shelfLife) {
        this.count(otherwise, onStale);
        throw error;
      }
      const mark = setup.config.mark;
      const value = mark === undefined ? entry!.value : mark(entry!.value, { asOf: entry!.asOf, ageMs });
      this.count('stale', onStale, ageMs);
      onStale?.();
      return value as R;
    };
    if (isThenable(stored)) return Promise.resolve(stored).then(answer);
    try {
      return Promise.resolve(answer(stored));
    } catch (final) {
      return Promise.reject(final);
    }
  }

  /** The entry under `key` in `setup`'s store; a store that fails is a miss. */
  private read(setup: Setup, key: string): CacheEntry | undefined | PromiseLike<CacheEntry | undefined> {
    let stored: CacheEntry | undefined | PromiseLike<CacheEntry | undefined>;
    try {
      stored = setup.store.get(key);
    } catch (error) {
      this.storeFailed(error);
      return undefined;
    }
    if (!isThenable(stored)) {
      this.storeAnswered();
      return stored;
    }
    return Promise.resolve(stored).then(
      (entry) => {
        this.storeAnswered();
        return entry;
      },
      (error: unknown) => {
        this.storeFailed(error);
        return undefined;
      },
    );
  }

  /** Stores a successful answer, when it may answer a later call; a store that fails is logged, never the call's failure. */
  private write(setup: Setup, key: string, value: unknown): void {
    if (setup.keepMs <= 0) return;
    let written: void | PromiseLike<void>;
    try {
      written = setup.store.set(key, { value, asOf: this.now() }, setup.keepMs);
    } catch (error) {
      this.storeFailed(error);
      return;
    }
    if (isThenable(written))
      written.then(
        () => this.storeAnswered(),
        (error: unknown) => this.storeFailed(error),
      );
  }

  private storeFailed(error: unknown): void {
    if (this.storeFailing) return;
    this.storeFailing = true;
    this.log(CACHE_STORE_FAILED(this.name, error));
  }

  private storeAnswered(): void {
    if (!this.storeFailing) return;
    this.storeFailing = false;
    this.log(CACHE_STORE_RECOVERED(this.name));
  }

  /** Now, on the time line stored answers are dated on. */
  private now(): number {
    return this.wallOffset + this.clock.now();
  }

  private count(result: CacheResult, onStale: (() => void) | undefined, ageMs?: number): void {
    this.counters[result]++;
    if (this.results.active) this.results.emit({ name: this.name, result, ageMs, guarded: onStale !== undefined });
  }
}

/** The last value of `source` (`undefined` when it completes empty). */
function lastOf<T>(source: Observable<T>): Promise<T | undefined> {
  return lastValueFrom(source, { defaultValue: undefined });
}
