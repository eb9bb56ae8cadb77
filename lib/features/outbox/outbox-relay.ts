import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { CircuitBreakerPolicy } from '../../policies/circuit-breaker/circuit-breaker.policy';
import { Clock, TimerHandle } from '../../kernel/clock';
import { CallNotPermittedError } from '../../kernel/errors';
import { RetryPolicy } from '../../policies/retry/retry.policy';
import { describe } from '../../config/config.messages';
import { OutboxPublishTimeoutError } from './outbox.errors';
import { PUBLISH_FAILED, RELAY_PASS_FAILED } from './outbox.messages';
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
  /** Reports the first failed publish or pass of an episode (database unreachable…); the relay goes on. */
  readonly warn: (message: string) => void;
}

/** Longest wait before a failed event is tried again. */
const MAX_BACKOFF_MS = 5 * 60_000;
/** How often sent events past their retention are deleted. */
const RETENTION_SWEEP_MS = 60_000;
/** Longest error text kept in a row's `last_error`. */
const MAX_ERROR_TEXT = 1000;

/** How one claimed row's publish ended. */
type Outcome = 'published' | CallNotPermittedError | { readonly error: unknown };

/** A published row waiting for its batch's `markSent`. */
interface SentMark {
  readonly seq: string;
  readonly done: (error?: unknown) => void;
}

/**
 * Publishes outbox events: claims due rows under a lease, publishes each
 * through the named retry instance behind the named circuit breaker (each
 * publish bounded by `relay.publishTimeout`), marks the published ones
 * sent, and backs off, parks or gives back the others. Each claimed row
 * goes its own way: the moment one is marked, the next event of its key
 * can be claimed, so a slow or stuck publish holds no other key. Runs a
 * pass whenever a committing transaction NOTIFYs, at each poll, and when
 * a publish ends. Several relays (in one process or many) share the table
 * safely.
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
  /** The table on the listening connection, while there is one: statements run there. */
  private onListener: OutboxStore | undefined;
  private listening = false;
  /** Rows being published by the relay's own passes. */
  private readonly inFlight = new Set<Promise<void>>();
  /** The seqs of those rows: their leases are extended while they run, so no other relay takes one over. */
  private readonly held = new Set<string>();
  private renewTimer: TimerHandle = undefined;
  /** Aborted when `stop` has waited `publishTimeout`: retry waits end, publishes still in flight are given back. */
  private stopping = stopSignal();
  private sentMarks: SentMark[] = [];
  private marking = false;
  /** Whether a failed publish was logged and no publish has succeeded since. */
  private publishEpisode = false;
  /** Whether a failed pass was logged and no pass has succeeded since. */
  private passEpisode = false;

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
    this.stopping = stopSignal();
    this.wake();
    this.sweep();
  }

  /**
   * Stops the relay: no more claims; publishes in flight get until
   * `publishTimeout` to end (each attempt is bounded by it), then the rest
   * are abandoned and their rows given back. Returns within
   * `publishTimeout` (plus the statements that mark the rows).
   */
  async stop(): Promise<void> {
    this.running = false;
    const { clock } = this.deps;
    clock.clearTimeout(this.pollTimer);
    clock.clearTimeout(this.sweepTimer);
    this.pollTimer = this.sweepTimer = undefined;
    // Rows are claimed and marked on the listening connection: let that work end first.
    await this.passing;
    if (this.inFlight.size > 0) {
      const deadline = clock.setTimeout(() => this.stopping.abort(), this.options.relay.publishTimeoutMs);
      await Promise.all(this.inFlight);
      clock.clearTimeout(deadline);
    }
    clock.clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
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
   * One pass: claims up to `batchSize` due rows, publishes them (rows in
   * one batch have distinct ordering keys, so concurrently) and waits for
   * all of them to be marked.
   */
  async runOnce(): Promise<RelayPassResult> {
    const rows = await this.store.claim(this.owner, this.options.relay.batchSize, this.options.relay.leaseMs);
    const results = await Promise.all(rows.map((row) => this.settle(row)));
    const count = (result: OutboxPublishResult) => results.filter((r) => r === result).length;
    return {
      claimed: rows.length,
      published: count('published'),
      failed: count('failed'),
      parked: count('parked'),
      notPermitted: count('not_permitted'),
    };
  }

  /** Deletes sent events past retention, in bounded batches. */
  deleteSent(): Promise<number> {
    return this.store.deleteSent(this.options.retentionMs);
  }

  /** The table where statements run now: the listening connection while there is one. */
  private get table(): OutboxStore {
    return this.onListener ?? this.store;
  }

  /** Publishes one claimed row and marks it; what it counted, or undefined when given back at stop. */
  private async settle(row: ClaimedRow): Promise<OutboxPublishResult | undefined> {
    const outcome = await this.publishOne(row);
    if (outcome === 'published') {
      this.publishEpisode = false;
      await this.markSent(row.seq);
      this.deps.count(row.topic, 'published');
      return 'published';
    }
    if (outcome instanceof CallNotPermittedError) {
      const delay = outcome.retryAfterMs ?? this.options.relay.pollIntervalMs;
      await this.table.release(this.owner, [row.seq], delay);
      this.deps.count(row.topic, 'not_permitted');
      return 'not_permitted';
    }
    if (this.stopping.signal.aborted) {
      // Abandoned at shutdown, not failed: the next relay takes it without charging an attempt.
      await this.table.release(this.owner, [row.seq], 0);
      return undefined;
    }
    if (!this.publishEpisode) {
      this.publishEpisode = true;
      this.deps.warn(PUBLISH_FAILED(row.topic, row.id, errorText(outcome.error)));
    }
    const state = await this.table.markFailed(
      this.owner,
      row.seq,
      errorText(outcome.error).slice(0, MAX_ERROR_TEXT),
      this.backoff(row.attempts + 1),
      this.options.relay.maxAttempts,
    );
    const result = state === 'parked' ? 'parked' : 'failed';
    this.deps.count(row.topic, result);
    return result;
  }

  /** Marks `seq` sent, with the other rows published meanwhile: one statement per batch of marks. */
  private markSent(seq: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.sentMarks.push({ seq, done: (error) => (error === undefined ? resolve() : reject(asError(error))) });
      if (!this.marking) void this.flushSentMarks();
    });
  }

  private async flushSentMarks(): Promise<void> {
    this.marking = true;
    while (this.sentMarks.length > 0) {
      const marks = this.sentMarks;
      this.sentMarks = [];
      try {
        await this.table.markSent(
          this.owner,
          marks.map((mark) => mark.seq),
        );
        for (const mark of marks) mark.done();
      } catch (error) {
        for (const mark of marks) mark.done(error);
      }
    }
    this.marking = false;
  }

  private async publishOne(row: ClaimedRow): Promise<Outcome> {
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
      await retry.execute(() => circuitBreaker.execute(() => this.bounded(event)), {
        signal: this.stopping.signal,
      });
      return 'published';
    } catch (error) {
      // Refused by the breaker before anything left: no attempt is counted.
      if (error instanceof CallNotPermittedError) return error;
      return { error };
    }
  }

  /** One call of the publisher, failed with {@link OutboxPublishTimeoutError} when it does not settle in time. */
  private bounded(event: OutboxEvent): Promise<void> {
    const ms = this.options.relay.publishTimeoutMs;
    const { clock } = this.deps;
    const { signal } = this.stopping;
    return new Promise<void>((resolve, reject) => {
      const timer = clock.setTimeout(() => end(new OutboxPublishTimeoutError(event.topic, ms)), ms);
      // Abandoned when stopping has waited long enough, and its timer with it: nothing keeps the process alive.
      const onStop = () => end(signal.reason);
      signal.addEventListener('abort', onStop, { once: true });
      const end = (error?: unknown) => {
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', onStop);
        if (error === undefined) resolve();
        else reject(asError(error));
      };
      try {
        this.publish(event).then(
          () => end(),
          (error: unknown) => end(asError(error)),
        );
      } catch (error) {
        end(error);
      }
    });
  }

  private async loop(): Promise<void> {
    this.deps.clock.clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    const { batchSize, leaseMs } = this.options.relay;
    try {
      await this.ensureListening();
      while (this.running) {
        this.again = false;
        const room = batchSize - this.inFlight.size;
        // Full: each publish that ends wakes the relay.
        if (room <= 0) break;
        const rows = await this.table.claim(this.owner, room, leaseMs);
        this.passEpisode = false;
        for (const row of rows) this.track(row);
        // A claim that found nothing, with no wake-up meanwhile: nothing is due until the next poll or notification.
        if (rows.length === 0 && !this.again) break;
      }
    } catch (error) {
      this.passFailed(error);
    }
    if (this.running) this.pollTimer = this.deps.clock.setTimeout(() => this.wake(), this.options.relay.pollIntervalMs);
  }

  /** Publishes `row` on its own: its end frees the next event of its key, so it wakes the relay. */
  private track(row: ClaimedRow): void {
    const task: Promise<void> = this.settle(row).then(
      () => undefined,
      (error: unknown) => this.passFailed(error),
    );
    this.inFlight.add(task);
    this.held.add(row.seq);
    this.scheduleRenewal();
    void task.finally(() => {
      this.inFlight.delete(task);
      this.held.delete(row.seq);
      this.wake();
    });
  }

  /**
   * Extends the leases of the rows in flight every third of a lease: a
   * publish that outlives its lease (retried, or slower than the lease)
   * keeps its row, so no other relay publishes the event again meanwhile.
   */
  private scheduleRenewal(): void {
    if (this.renewTimer !== undefined || this.held.size === 0) return;
    const { leaseMs } = this.options.relay;
    this.renewTimer = this.deps.clock.setTimeout(
      () => {
        this.renewTimer = undefined;
        void this.renewLeases(leaseMs);
      },
      Math.ceil(leaseMs / 3),
    );
  }

  private async renewLeases(leaseMs: number): Promise<void> {
    if (this.held.size === 0) return;
    try {
      await this.table.extendLease(this.owner, [...this.held], leaseMs);
    } catch (error) {
      this.passFailed(error);
    }
    this.scheduleRenewal();
  }

  /** Logs a failed pass or mark once per episode: a broken schema or database does not flood the log. */
  private passFailed(error: unknown): void {
    if (this.passEpisode) return;
    this.passEpisode = true;
    this.deps.warn(RELAY_PASS_FAILED(errorText(error)));
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
          this.passFailed(error);
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
      (error: unknown) => this.passFailed(error),
    );
    this.sweepTimer = this.deps.clock.setTimeout(() => this.sweep(), RETENTION_SWEEP_MS);
  }

  /** Wait after the `attempts`-th failure: the poll interval, doubled each time, at most 5 minutes. */
  private backoff(attempts: number): number {
    return Math.min(this.options.relay.pollIntervalMs * 2 ** Math.min(attempts - 1, 30), MAX_BACKOFF_MS);
  }
}

/**
 * The controller whose signal ends the publishes in flight at stop. Each
 * of them listens to it (up to `batchSize` at once, each listener removed
 * when its publish ends), so Node's leak warning past ten listeners would
 * be a false alarm.
 */
function stopSignal(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** `error` as an Error: a publisher may reject with anything. */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(describe(error));
}

/** The error's class and message, as logs and `last_error` keep it (never the event's payload). */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return describe(error);
  // A subclass that does not set `name` still says what it is.
  const name = error.name === 'Error' ? error.constructor.name : error.name;
  return error.message === '' ? name : `${name}: ${error.message}`;
}
