/**
 * One event as the publisher gets it: what `Outbox.add` was given, with
 * its id and the time it was added.
 */
export interface OutboxEvent<P = unknown> {
  /** The event id: a UUID unless `Outbox.add` was given one. Consumers key their idempotency on it. */
  readonly id: string;
  /** The topic (a Nest microservices pattern when the publisher is a `ClientProxy`). */
  readonly topic: string;
  /** The ordering key: events with the same key are published one at a time, in commit order. */
  readonly key: string | null;
  /** The payload as added, JSON round-tripped. */
  readonly payload: P;
  /** Headers given to `Outbox.add`. */
  readonly headers: Readonly<Record<string, string>>;
  /** When the event was added, in ms since the epoch (the store's clock). */
  readonly occurredAt: number;
}

/**
 * What a `ClientProxy` publisher emits as the message's data: the event
 * with its id, so a consumer keys on it with `outboxEventId`.
 */
export interface OutboxEnvelope<P = unknown> extends OutboxEvent<P> {
  /** Marks the data as an outbox envelope. */
  readonly outbox: 1;
}

/** Where an event is: waiting (or in flight), published, or parked after `maxAttempts` failures. */
export type OutboxEventState = 'pending' | 'sent' | 'parked';

/** An event as the table holds it, for the admin endpoint and `Outbox.find`. */
export interface OutboxRow extends OutboxEvent {
  /** Where the event is. */
  readonly state: OutboxEventState;
  /** Failed relay passes so far. */
  readonly attempts: number;
  /** The last publish error: its class and message (never the payload). */
  readonly lastError: string | undefined;
  /** When it was published, in ms since the epoch. */
  readonly sentAt: number | undefined;
}

/** The outbox's backlog, as the metrics and the health check read it. */
export interface OutboxStats {
  /** Events not yet published (in flight included), parked ones excluded. */
  readonly pending: number;
  /** Events parked after `maxAttempts` failures. */
  readonly parked: number;
  /** ms since the oldest pending event was added; 0 when none is pending. */
  readonly oldestPendingAgeMs: number;
}
