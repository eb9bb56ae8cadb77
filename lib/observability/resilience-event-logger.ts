import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../kernel/clock';
import type { ConfigChangedEvent } from '../kernel/config-change';
import { IdempotencyStoreUnavailableError } from '../kernel/errors';
import { Unsubscribe } from '../kernel/events';
import { errorText, PolicyTelemetry, TelemetryLog } from '../kernel/telemetry';
import { IdempotencyRegistry } from '../features/idempotency/idempotency.registry';
import { InstanceCatalog, ObservedHedge, ObservedInstance, watchHedges } from './instance-catalog';
import {
  CONFIG_CHANGED,
  IDEMPOTENCY_STORE_ANSWERING,
  IDEMPOTENCY_STORE_FAILING,
  OF_KEY,
} from './observability.messages';
import { readLoggingOptions, ResolvedLoggingOptions } from './observability.options';

/**
 * A run of events (budget denials, bulkhead rejections) reported twice: at
 * the first one, and at the first sign of activity (`watchActivity`) once
 * none has happened for `quietMs`, with the count. However many calls are
 * refused, that is two log lines per episode, and no timer is needed: the
 * activity listener exists only while an episode lasts.
 */
class Episode<T> {
  private count = 0;
  private startedAt = 0;
  private lastAt = 0;
  private stopWatching: Unsubscribe | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly quietMs: number,
    private readonly watchActivity: (onActivity: () => void) => Unsubscribe,
    private readonly onStart: (first: T) => void,
    private readonly onEnd: (count: number, durationMs: number) => void,
  ) {}

  hit(detail: T): void {
    const now = this.clock.now();
    this.lastAt = now;
    this.count++;
    if (this.stopWatching !== undefined) return;
    this.startedAt = now;
    this.onStart(detail);
    this.stopWatching = this.watchActivity(this.activity);
  }

  dispose(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
  }

  private readonly activity = (): void => {
    if (this.clock.now() - this.lastAt < this.quietMs) return;
    this.dispose();
    this.onEnd(this.count, this.lastAt - this.startedAt);
    this.count = 0;
  };
}

/**
 * Logs, through Nest's `Logger`, what an operator needs to see as it
 * happens, never once per call: every circuit breaker transition, every
 * change of an instance's settings (one line naming the keys), and the
 * start and end of each episode of retry-budget denials, of bulkhead
 * saturation and of store failures (a shared rate limiter's, the
 * idempotency store's), with the instance name. A store's own error text is
 * logged here and never sent to clients. Module option `logging`.
 */
@Injectable()
export class ResilienceEventLogger implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ResilienceModule');
  private readonly options: ResolvedLoggingOptions;
  private readonly subscriptions: Unsubscribe[] = [];
  private readonly episodes: Array<Episode<unknown>> = [];
  /** What each instance watched holds here, dropped when the registry evicts it (an idle key). */
  private readonly bound = new Map<object, { subscriptions: Unsubscribe[]; episodes: Array<Episode<unknown>> }>();

  /** @internal */
  constructor(
    private readonly catalog: InstanceCatalog,
    private readonly idempotency: IdempotencyRegistry,
  ) {
    this.options = readLoggingOptions(catalog.registry.options.extras.logging);
  }

  /** Starts watching every instance and the idempotency store (unless `logging` is off). */
  onApplicationBootstrap(): void {
    if (!this.options.enabled) return;
    this.subscriptions.push(
      this.catalog.watch(
        (observed) => this.bind(observed),
        (evicted) => this.unbind(evicted),
        true,
      ),
      watchHedges(
        this.catalog.registry,
        (observed) => this.bindHedge(observed),
        (evicted) => this.release(evicted.instance),
      ),
    );
    this.watchIdempotencyStore();
  }

  /** Stops watching and drops pending episode ends. */
  onModuleDestroy(): void {
    for (const unsubscribe of this.subscriptions) unsubscribe();
    this.subscriptions.length = 0;
    for (const episode of this.episodes) episode.dispose();
    this.episodes.length = 0;
    for (const observed of [...this.bound.keys()]) this.release(observed);
  }

  /**
   * Logs what `observed` reports. The instance of one key (a breaker per
   * host) logs its transitions and episodes with its key; a change of
   * config is logged once, by its name's instance, not by each of its keys
   * nor by a method's own instances.
   */
  private bind(observed: ObservedInstance): void {
    const channel: PolicyTelemetry = observed.instance;
    const held = { subscriptions: [] as Unsubscribe[], episodes: [] as Array<Episode<unknown>> };
    this.bound.set(observed.instance, held);
    const key = keyOf(observed);
    if (!observed.derived && key === undefined)
      held.subscriptions.push(
        ...channel.tapEvents((type) =>
          type === 'CONFIG_CHANGED'
            ? (event) => this.logger.log(CONFIG_CHANGED(event as ConfigChangedEvent))
            : undefined,
        ),
      );
    if (channel.logEvents !== undefined) held.subscriptions.push(...channel.logEvents(this.logFor(key, held)));
  }

  /** A hedge logs a change of its config once, by its name's instance, as the policies' instances do. */
  private bindHedge(observed: ObservedHedge): void {
    if (observed.derived || observed.key !== undefined) return;
    const subscriptions = [observed.instance.onConfigChanged((event) => this.logger.log(CONFIG_CHANGED(event)))];
    this.bound.set(observed.instance, { subscriptions, episodes: [] });
  }

  /** An evicted instance (an idle key): its listeners and pending episode ends go with it. */
  private unbind(observed: ObservedInstance): void {
    this.release(observed.instance);
  }

  private release(instance: object): void {
    const held = this.bound.get(instance);
    if (held === undefined) return;
    this.bound.delete(instance);
    for (const unsubscribe of held.subscriptions) unsubscribe();
    for (const episode of held.episodes) episode.dispose();
  }

  /** Where an instance writes its log lines and episodes: each line naming its key, if it has one. */
  private logFor(key: string | undefined, held: { episodes: Array<Episode<unknown>> }): TelemetryLog {
    const line = key === undefined ? (message: string) => message : (message: string) => `${message}${OF_KEY(key)}`;
    return {
      log: (message) => this.logger.log(line(message)),
      warn: (message) => this.logger.warn(line(message)),
      episode: (watchActivity, start, end) => this.episode(watchActivity, start, end, held.episodes),
    };
  }

  /** An episode, reported through `start` and `end`, held in `into` until its instance or the module goes. */
  private episode<T>(
    watchActivity: (onActivity: () => void) => Unsubscribe,
    start: (first: T) => void,
    end: (count: number, durationMs: number) => void,
    into: Array<Episode<unknown>>,
  ): (detail: T) => void {
    const episode = new Episode<T>(this.catalog.registry.clock, this.options.quietPeriodMs, watchActivity, start, end);
    into.push(episode as Episode<unknown>);
    return (detail) => episode.hit(detail);
  }

  /** One episode for the idempotency store: every failure before anything ran, or while settling a key. */
  private watchIdempotencyStore(): void {
    const failed = this.episode<IdempotencyStoreUnavailableError>(
      (onActivity) => this.idempotency.onOutcome(onActivity),
      (first) =>
        this.logger.warn(
          IDEMPOTENCY_STORE_FAILING(first.message, first.cause === undefined ? undefined : errorText(first.cause)),
        ),
      (count, ms) => this.logger.log(IDEMPOTENCY_STORE_ANSWERING(count, ms)),
      this.episodes,
    );
    this.subscriptions.push(
      this.idempotency.onOutcome(({ error }) => {
        if (error instanceof IdempotencyStoreUnavailableError) failed(error);
      }),
    );
  }
}

/** The key of the instance of one key; undefined for a named, derived, fallback or cache instance. */
function keyOf(observed: ObservedInstance): string | undefined {
  return 'key' in observed ? observed.key : undefined;
}
