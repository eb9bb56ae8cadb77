import { randomUUID } from 'node:crypto';
import { CircuitBreakerPolicy } from '../../policies/circuit-breaker/circuit-breaker.policy';
import { Clock, TimerHandle } from '../../kernel/clock';
import { CallNotPermittedError } from '../../kernel/errors';
import { RetryPolicy } from '../../policies/retry/retry.policy';
import { RELAY_PASS_FAILED } from './outbox.messages';
import { OutboxPublishFunction, ResolvedOutboxOptions } from './outbox.options';
import { OutboxEvent } from './outbox.types';
import { ClaimedRow, OutboxListener, OutboxStore } from './outbox-store';

/** How one publish ended, as `resilience4nest_outbox_published_total{result}` counts it. */
export type OutboxPublishResult = 'published' | 'failed' | 'parked' | 'not_permitted';

/** What one relay pass did. */
export interface RelayPassResult {
  /** Rows claimed. */
  readonly claimed: number;
  /** Rows published and marked sent. */
  readonly published: number;
  /** Rows that failed and will be tried again. */
  readonly failed: number;
  /** Rows parked by this pass. */
  readonly parked: number;
  /** Rows given back unpublished because the breaker refused. */
  readonly notPermitted: number;
}

/** What the relay needs from the application. */
export interface RelayDependencies {
  /** The clock of the poll and retention timers (and of the policies' waits). */
  readonly clock: Clock;
  /** The retry instance each publish runs through. */
  readonly retry: RetryPolicy;
  /** The circuit breaker each publish runs behind. */
  readonly circuitBreaker: CircuitBreakerPolicy;
  /** Counts each publish outcome by topic. */
  readonly count: (topic: string, result: OutboxPublishResult) => void;
  /** Reports a failed pass (database unreachable…); the relay goes on at the next poll. */
  readonly warn: (message: string) => void;
}

/** Longest wait before a failed event is tried again. */
const MAX_BACKOFF_MS = 5 * 60_000;
/** How often sent events past their retention are deleted. */
const RETENTION_SWEEP_MS = 60_000;

/**
 * Publishes outbox events: claims due rows in batches under a lease,
 * publishes each through the named retry instance behind the named circuit
 * breaker, marks the published ones sent, and backs off, parks or gives
 * back the others. Runs a pass whenever a committing transaction NOTIFYs,
 * at each poll, and at once again after a pass that claimed anything.
 * Several relays (in one process or many) share the table safely.
 */
export class OutboxRelay {
  /** This relay's lease owner id. */
  readonly owner = randomUUID();
  private readonly store: OutboxStore;
  private readonly publish: OutboxPublishFunction;
  private running = false;
  private passing: Promise<void> | undefined;
  private again = false;
  private pollTimer: TimerHandle = undefined;
  private sweepTimer: TimerHandle = undefined;
  private listener: OutboxListener | undefined;
  /** The table on the listening connection, while there is one: passes run their statements there. */
  private onListener: OutboxStore | undefined;
  private listening = false;

  /**
   * @param options - the module's outbox options
   * @param deps - clock, policies and counters
   */
  constructor(
    private readonly options: ResolvedOutboxOptions,
    private readonly deps: RelayDependencies,
  ) {
    this.store = options.store;
    this.publish = options.publish;
  }

  /** Starts listening, polling and the retention sweep; the first pass runs at once. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.wake();
    this.sweep();
  }

  /** Stops the relay and waits for a pass in progress to end (its rows are marked or their lease runs out). */
  async stop(): Promise<void> {
    this.running = false;
    this.deps.clock.clearTimeout(this.pollTimer);
    this.deps.clock.clearTimeout(this.sweepTimer);
    this.pollTimer = this.sweepTimer = undefined;
    // The pass in progress runs its statements on the listening connection: let it end first.
    await this.passing;
    this.listener?.close();
    this.listener = undefined;
    this.onListener = undefined;
  }

  /** Asks for a pass now (one is queued if a pass is running). */
  wake(): void {
    if (!this.running) return;
    if (this.passing !== undefined) {
      this.again = true;
      return;
    }
    this.passing = this.loop().finally(() => (this.passing = undefined));
  }

  /**
   * One pass: claims up to `batchSize` due rows and publishes them. Rows in
   * one batch have distinct ordering keys, so they are published
   * concurrently.
   */
  runOnce(): Promise<RelayPassResult> {
    return this.pass(this.store);
  }

  /** One pass, its statements run on `store`'s connection. */
  private async pass(store: OutboxStore): Promise<RelayPassResult> {
    const { batchSize, leaseMs } = this.options.relay;
    const rows = await store.claim(this.owner, batchSize, leaseMs);
    let refusedFor = 0;
    const outcomes = await Promise.all(
      rows.map(async (row) => {
        const outcome = await this.publishOne(row);
        if (outcome instanceof CallNotPermittedError) {
          refusedFor = Math.max(refusedFor, outcome.retryAfterMs ?? this.options.relay.pollIntervalMs);
          return 'not_permitted' as const;
        }
        return outcome;
      }),
    );
    const sent = rows.filter((_, i) => outcomes[i] === 'published');
    const refused = rows.filter((_, i) => outcomes[i] === 'not_permitted');
    await store.markSent(
      this.owner,
      sent.map((row) => row.seq),
    );
    await store.release(
      this.owner,
      refused.map((row) => row.seq),
      refusedFor,
    );
    let failed = 0;
    let parked = 0;
    for (let i = 0; i < rows.length; i++) {
      const outcome = outcomes[i];
      if (typeof outcome !== 'object') {
        this.deps.count(rows[i].topic, outcome);
        continue;
      }
      const state = await store.markFailed(
        this.owner,
        rows[i].seq,
        errorClass(outcome.error),
        this.backoff(rows[i].attempts + 1),
        this.options.relay.maxAttempts,
      );
      if (state === 'parked') parked++;
      else failed++;
      this.deps.count(rows[i].topic, state === 'parked' ? 'parked' : 'failed');
    }
    return { claimed: rows.length, published: sent.length, failed, parked, notPermitted: refused.length };
  }

  /** Deletes sent events past retention, in bounded batches. */
  deleteSent(): Promise<number> {
    return this.store.deleteSent(this.options.retentionMs);
  }

  private async publishOne(row: ClaimedRow): Promise<'published' | CallNotPermittedError | { error: unknown }> {
    const event: OutboxEvent = {
      id: row.id,
      topic: row.topic,
      key: row.key,
      payload: row.payload,
      headers: row.headers,
      occurredAt: row.occurredAt,
    };
    const { retry, circuitBreaker } = this.deps;
    try {
      await retry.execute(() => circuitBreaker.execute(() => this.publish(event)));
      return 'published';
    } catch (error) {
      // Refused by the breaker before anything left: no attempt is counted.
      if (error instanceof CallNotPermittedError) return error;
      return { error };
    }
  }

  private async loop(): Promise<void> {
    this.deps.clock.clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    try {
      await this.ensureListening();
      for (;;) {
        this.again = false;
        // On the listening connection when there is one: a pool the application's transactions fill up does not hold the relay back.
        const pass = await this.pass(this.onListener ?? this.store);
        // A pass that claimed anything may have freed the next event of a key: look again at once.
        if (!this.running || (pass.claimed - pass.notPermitted === 0 && !this.again)) break;
      }
    } catch (error) {
      this.deps.warn(RELAY_PASS_FAILED(error));
    }
    if (this.running) this.pollTimer = this.deps.clock.setTimeout(() => this.wake(), this.options.relay.pollIntervalMs);
  }

  private async ensureListening(): Promise<void> {
    if (!this.options.relay.notify || this.listener !== undefined || this.listening) return;
    this.listening = true;
    try {
      const listener = await this.store.listen(
        () => this.wake(),
        (error) => {
          this.listener = undefined;
          this.onListener = undefined;
          this.deps.warn(RELAY_PASS_FAILED(error));
        },
      );
      if (this.running) {
        this.listener = listener;
        this.onListener = listener.store;
      } else listener.close();
    } finally {
      this.listening = false;
    }
  }

  private sweep(): void {
    if (!this.running) return;
    this.deleteSent().then(
      () => undefined,
      (error: unknown) => this.deps.warn(RELAY_PASS_FAILED(error)),
    );
    this.sweepTimer = this.deps.clock.setTimeout(() => this.sweep(), RETENTION_SWEEP_MS);
  }

  /** Wait after the `attempts`-th failure: the poll interval, doubled each time, at most 5 minutes. */
  private backoff(attempts: number): number {
    return Math.min(this.options.relay.pollIntervalMs * 2 ** Math.min(attempts - 1, 30), MAX_BACKOFF_MS);
  }
}

/** The error's class name: rows and endpoints never keep messages. */
function errorClass(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  // A subclass that does not set `name` still says what it is.
  return error.name === 'Error' ? error.constructor.name : error.name;
}
