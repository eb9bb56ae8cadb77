import { randomUUID } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { TimerHandle } from '../../kernel/clock';
import { idempotencyStorage } from '../idempotency/idempotency.context';
import { ResilienceRegistry } from '../../registry/resilience.registry';
import { OutboxNoTransactionError } from './outbox.errors';
import { BAD_ADD_OPTION, BAD_TOPIC, OUTBOX_NOT_CONFIGURED, PAYLOAD_NOT_JSON } from './outbox.messages';
import { readOutboxOptions, ResolvedOutboxOptions } from './outbox.options';
import { OutboxPublishResult, OutboxRelay } from './outbox-relay';
import { findTransactionHost, TransactionHostLike } from '../transaction/cls-transaction';
import { callerSqlRunnerOf, SqlRunner, sqlRunnerOf } from '../transaction/sql-runner';
import { OutboxRow, OutboxStats } from './outbox.types';
import { OutboxReplayOptions, readReplaySelection } from './outbox-replay';

/** Options of {@link Outbox.add}. */
export interface OutboxAddOptions {
  /** Ordering key: events with the same key are published one at a time, in commit order. */
  key?: string;
  /** Headers carried with the event (string values). */
  headers?: Record<string, string>;
  /** The event id; a new UUID when not given. Adding the same id twice fails the transaction (unique). */
  id?: string;
  /** The transaction to write in, when it is not found in scope: a pg client inside BEGIN, a TypeORM or Drizzle transaction. */
  tx?: unknown;
}

/**
 * The transactional outbox (module option `outbox`). {@link Outbox.add}
 * writes an event in the caller's database transaction, so it commits with
 * the business writes or not at all; the relay running in every instance
 * of the application publishes it afterwards, at least once. Injectable;
 * provided and exported by `ResilienceModule`.
 *
 * @example
 * ```ts
 * @Post() @Idempotent({ transactional: true })
 * async capture(@Body() body: CaptureDto) {
 *   await idempotencyTransaction().query('UPDATE payments SET captured = true WHERE id = $1', [body.id]);
 *   await this.outbox.add('payment.captured', { paymentId: body.id }, { key: body.id });
 * }
 * ```
 */
@Injectable()
export class Outbox implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly settings: ResolvedOutboxOptions | undefined;
  private relayInstance: OutboxRelay | undefined;
  private transactionHost: TransactionHostLike | undefined;
  private readonly counts = new Map<string, Map<OutboxPublishResult, number>>();
  private latest: OutboxStats | undefined;
  private statsTimer: TimerHandle = undefined;
  private readonly logger = new Logger('Outbox');

  /** @internal */
  constructor(
    private readonly registry: ResilienceRegistry,
    @Optional() private readonly moduleRef?: ModuleRef,
  ) {
    this.settings = readOutboxOptions(registry.options.extras.outbox);
  }

  /** Whether the module option `outbox` is set. */
  get configured(): boolean {
    return this.settings !== undefined;
  }

  /** The relay of this process; `undefined` when the outbox is off or `relay.enabled` is false. */
  get relay(): OutboxRelay | undefined {
    return this.relayInstance;
  }

  /**
   * Writes an event into the outbox table inside the current transaction:
   * `options.tx` when given, else the one of the running
   * `@Idempotent({ transactional: true })` method, else the active
   * `@nestjs-cls/transactional` transaction. Returns the event id.
   *
   * @throws OutboxNoTransactionError when there is no transaction in scope
   * @throws Error naming the option when `topic`, `options` or the payload is invalid
   */
  async add(topic: string, payload: unknown, options: OutboxAddOptions = {}): Promise<string> {
    const settings = this.require('Outbox.add');
    if (typeof topic !== 'string' || topic === '') throw new Error(BAD_TOPIC(topic));
    const { key, headers = {}, id = randomUUID() } = options;
    if (key !== undefined && (typeof key !== 'string' || key === ''))
      throw new Error(BAD_ADD_OPTION(topic, 'key', 'a non-empty string', key));
    if (typeof id !== 'string' || id === '') throw new Error(BAD_ADD_OPTION(topic, 'id', 'a non-empty string', id));
    if (
      headers === null ||
      typeof headers !== 'object' ||
      Array.isArray(headers) ||
      !Object.values(headers).every((v) => typeof v === 'string')
    )
      throw new Error(BAD_ADD_OPTION(topic, 'headers', 'an object of strings', headers));
    const run = await this.transaction(topic, options.tx);
    let json: string | undefined;
    try {
      json = JSON.stringify(payload);
    } catch (error) {
      throw new Error(PAYLOAD_NOT_JSON(topic, error instanceof Error ? error.message : String(error)), {
        cause: error,
      });
    }
    if (json === undefined) throw new Error(PAYLOAD_NOT_JSON(topic, `${typeof payload} has no JSON form`));
    await settings.store.insert(
      run,
      { id, topic, key: key ?? null, payload: json, headers: JSON.stringify(headers) },
      settings.relay.notify,
    );
    return id;
  }

  /** Puts a parked event back in line, its attempts reset. False when no parked event has that id. */
  async requeue(id: string): Promise<boolean> {
    const requeued = await this.require('Outbox.requeue').store.requeue(id);
    if (requeued) this.relayInstance?.wake();
    return requeued;
  }

  /**
   * Re-sends events already sent (a consumer lost its data, a new consumer
   * joined): the sent events matching every condition of `selection` are
   * due again, attempts reset, in their original order per key. Returns
   * how many. Pending and parked events are left as they are.
   *
   * @throws Error naming the option when `selection` is empty or invalid
   */
  async replay(selection: OutboxReplayOptions): Promise<number> {
    const settings = this.require('Outbox.replay');
    const replayed = await settings.store.replay(readReplaySelection(selection));
    if (replayed > 0) this.relayInstance?.wake();
    return replayed;
  }

  /** Parked events, oldest first (at most `limit`). */
  parked(limit = 100): Promise<OutboxRow[]> {
    return this.require('Outbox.parked').store.parked(limit);
  }

  /** The backlog now, read from the table (and kept for the metrics). */
  async stats(): Promise<OutboxStats> {
    const stats = await this.require('Outbox.stats').store.stats();
    this.latest = stats;
    return stats;
  }

  /** The backlog as last read (at most one poll interval old); `undefined` before the first read. */
  get lastStats(): OutboxStats | undefined {
    return this.latest;
  }

  /** Publish outcomes counted in this process, by topic and result. */
  get published(): ReadonlyMap<string, ReadonlyMap<OutboxPublishResult, number>> {
    return this.counts;
  }

  /** Creates the table (unless `createSchema: false`), finds `@nestjs-cls/transactional`, starts the relay. */
  async onApplicationBootstrap(): Promise<void> {
    const settings = this.settings;
    if (settings === undefined) return;
    if (settings.createSchema) await settings.store.ensureSchema();
    this.transactionHost = findTransactionHost(this.moduleRef);
    if (settings.relay.enabled) {
      const { retry, circuitBreaker } = settings.relay;
      this.relayInstance = new OutboxRelay(settings, {
        clock: this.registry.clock,
        retry: this.registry.get('retry', retry, "outbox option 'relay.retry'"),
        circuitBreaker: this.registry.get('circuitBreaker', circuitBreaker, "outbox option 'relay.circuitBreaker'"),
        count: (topic, result) => this.count(topic, result),
        warn: (message) => this.logger.warn(message),
      });
      this.relayInstance.start();
    }
    this.refreshStats();
  }

  /** Stops the relay, waiting for its pass in progress. */
  async onModuleDestroy(): Promise<void> {
    this.registry.clock.clearTimeout(this.statsTimer);
    this.statsTimer = undefined;
    await this.relayInstance?.stop();
  }

  private async transaction(topic: string, tx: unknown): Promise<SqlRunner> {
    const who = `Outbox.add('${topic}')`;
    // A transaction given by the caller may be a client that never ran BEGIN: its event would commit alone.
    if (tx !== undefined) return callerSqlRunnerOf(tx, who);
    const scoped = idempotencyStorage.getStore()?.transaction;
    if (scoped !== undefined) return sqlRunnerOf(scoped, who);
    const host = this.transactionHost;
    if (host !== undefined && host.isTransactionActive()) return sqlRunnerOf(host.tx, who);
    throw new OutboxNoTransactionError(topic);
  }

  private refreshStats(): void {
    const settings = this.settings as ResolvedOutboxOptions;
    this.stats().then(
      () => undefined,
      () => undefined,
    );
    this.statsTimer = this.registry.clock.setTimeout(() => this.refreshStats(), settings.relay.pollIntervalMs);
  }

  private count(topic: string, result: OutboxPublishResult): void {
    let byResult = this.counts.get(topic);
    if (byResult === undefined) this.counts.set(topic, (byResult = new Map<OutboxPublishResult, number>()));
    byResult.set(result, (byResult.get(result) ?? 0) + 1);
  }

  private require(feature: string): ResolvedOutboxOptions {
    if (this.settings === undefined) throw new Error(OUTBOX_NOT_CONFIGURED(feature));
    return this.settings;
  }
}
