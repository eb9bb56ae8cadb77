import { from, lastValueFrom, Observable } from 'rxjs';
import { Clock, systemClock } from '../../kernel/clock';
import { isCancellation } from '../../kernel/cancellation';
import { EventStream } from '../../kernel/events';
import { EventTap, InstanceSnapshot, SpanEventSink } from '../../kernel/telemetry';
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
 */
export class CachePolicy {
  private readonly counters: CacheMetrics = { hit: 0, miss: 0, stale: 0, coalesced: 0 };
  private readonly results = new EventStream<CacheResultEvent>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  private readonly store: CacheStore;
  /** Keys are prefixed with the instance name in a store shared with other instances. */
  private readonly prefix: string;
  /** How long the store must keep an answer: as long as it may answer, fresh or stale. */
  private readonly keepMs: number;
  private readonly keyOf: (...args: unknown[]) => string;
  private readonly wallOffset: number;
  private storeFailing = false;

  /** A call was answered (see {@link CacheResultEvent}). */
  readonly onResult = this.results.subscribe;

  /**
   * @param name - instance name
   * @param config - resolved settings
   * @param clock - time source for ages
   * @param log - receives a line when the store starts failing and when it answers again
   */
  constructor(
    /** The instance's name, as configured. */
    readonly name: string,
    /** The resolved settings (durations in ms). */
    readonly config: CacheConfig,
    /** The time source for the answers' ages. */
    readonly clock: Clock,
    private readonly log: (message: string) => void,
  ) {
    this.store = config.store ?? new MemoryCacheStore(config.maxEntries);
    this.prefix = config.store === undefined ? '' : `${name}:`;
    this.keepMs = Math.max(config.ttl, config.staleIfError ?? 0);
    this.keyOf = config.key ?? jsonKey;
    // The system clock is monotonic and per process; a stored time must mean the same to the next process.
    this.wallOffset = clock === systemClock ? performance.timeOrigin : 0;
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
    if (listeners.size === 0) return [];
    return [this.results.subscribe((event) => listeners.get(event.result)?.(event))];
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
    let key: string;
    try {
      key = this.prefix + this.keyOf(...keyArgs);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.config.ttl <= 0) return this.miss(next, arg, key, onStale);
    const stored = this.read(key);
    if (isThenable(stored))
      return Promise.resolve(stored).then((entry) => this.fromEntry(next, arg, key, entry, onStale));
    return this.fromEntry(next, arg, key, stored, onStale);
  }

  private fromEntry<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    key: string,
    entry: CacheEntry | undefined,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    if (entry !== undefined) {
      const ageMs = this.now() - entry.asOf;
      if (ageMs < this.config.ttl) {
        this.count('hit', onStale, ageMs);
        return Promise.resolve(entry.value as R);
      }
    }
    return this.miss(next, arg, key, onStale);
  }

  /** Calls through (or joins the call in flight for `key`, when coalescing); stores a success, answers stale on a failure. */
  private miss<A, R>(
    next: (arg: A) => R | PromiseLike<R>,
    arg: A,
    key: string,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    if (this.config.coalesce) {
      const shared = this.inflight.get(key) as Promise<R> | undefined;
      if (shared !== undefined)
        return shared.then(
          (value) => {
            this.count('coalesced', onStale);
            return value;
          },
          (error: unknown) => this.failed(key, error, 'coalesced', onStale),
        );
    }
    let pending: R | PromiseLike<R>;
    try {
      pending = next(arg);
    } catch (error) {
      pending = Promise.reject(error);
    }
    const outcome = Promise.resolve(pending).then((value) => {
      this.write(key, value);
      return value;
    });
    if (this.config.coalesce) {
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
      (error: unknown) => this.failed(key, error, 'miss', onStale),
    );
  }

  /** A call failed with `error`: the last known good when one is young enough, else the error. */
  private failed<R>(
    key: string,
    error: unknown,
    otherwise: CacheResult,
    onStale: (() => void) | undefined,
  ): Promise<R> {
    const shelfLife = this.config.staleIfError;
    if (shelfLife === undefined || isCancellation(error)) {
      this.count(otherwise, onStale);
      return Promise.reject(error);
    }
    const stored = this.read(key);
    const answer = (entry: CacheEntry | undefined): R => {
      const ageMs = entry === undefined ? Infinity : this.now() - entry.asOf;
      if (ageMs > shelfLife) {
        this.count(otherwise, onStale);
        throw error;
      }
      const mark = this.config.mark;
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

  /** The entry under `key`; a store that fails is a miss. */
  private read(key: string): CacheEntry | undefined | PromiseLike<CacheEntry | undefined> {
    let stored: CacheEntry | undefined | PromiseLike<CacheEntry | undefined>;
    try {
      stored = this.store.get(key);
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
  private write(key: string, value: unknown): void {
    if (this.keepMs <= 0) return;
    let written: void | PromiseLike<void>;
    try {
      written = this.store.set(key, { value, asOf: this.now() }, this.keepMs);
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
