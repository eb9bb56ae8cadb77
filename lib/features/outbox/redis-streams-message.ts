import { OutboxEvent } from './outbox.types';

/**
 * The fields of a stream entry written by `RedisStreamsPublisher`: the
 * event id and topic in the clear (for `XRANGE` and for routing) and the
 * whole {@link OutboxEnvelope} as JSON.
 */
export const STREAM_FIELD = { id: 'id', topic: 'topic', data: 'data' } as const;

/** The `XADD` field-value pairs of an event: its id, its topic and the envelope a `ClientProxy` publisher sends. */
export function streamEntryFields(event: OutboxEvent): string[] {
  return [
    STREAM_FIELD.id,
    event.id,
    STREAM_FIELD.topic,
    event.topic,
    STREAM_FIELD.data,
    JSON.stringify({ outbox: 1, ...event }),
  ];
}

/** A stream entry as the server hands it on: the event id and topic when present, and the data. */
export interface StreamEntry {
  readonly eventId: string | undefined;
  readonly topic: string | undefined;
  readonly data: unknown;
}

/**
 * Reads an entry's flat field-value list. `data` is JSON-parsed (left a
 * string when it is not JSON); an entry without `data`, written by other
 * code, is handed on as an object of its fields.
 */
export function readStreamEntry(fields: readonly string[]): StreamEntry {
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i], fields[i + 1]);
  const raw = values.get(STREAM_FIELD.data);
  let data: unknown = raw;
  if (raw === undefined) data = Object.fromEntries(values);
  else
    try {
      data = JSON.parse(raw);
    } catch {
      // Not JSON: the handler gets the string as written.
    }
  return {
    eventId: values.get(STREAM_FIELD.id) || undefined,
    topic: values.get(STREAM_FIELD.topic) || undefined,
    data,
  };
}

/**
 * What a `RedisStreamsServer` handler gets as its context (`@Ctx()`): the
 * stream, the entry's id, the outbox event id and the pattern it was
 * routed by. `outboxEventId(context)` reads the event id from it. NestJS 12
 * types the handler's `@Ctx()` parameter `unknown`; narrow it with
 * `context instanceof RedisStreamsContext`.
 */
export class RedisStreamsContext {
  /** @internal */
  constructor(
    private readonly stream: string,
    private readonly messageId: string,
    private readonly eventId: string | undefined,
    private readonly pattern: string,
    private readonly claimed: boolean,
  ) {}

  /** The stream the entry was read from. */
  getStream(): string {
    return this.stream;
  }

  /** The entry's id in the stream (`1700000000000-0`), the one acknowledged with `XACK`. */
  getMessageId(): string {
    return this.messageId;
  }

  /** The outbox event id the entry carries; `undefined` for an entry not written by `RedisStreamsPublisher`. */
  getOutboxEventId(): string | undefined {
    return this.eventId;
  }

  /** The `@EventPattern` the entry was routed to: its topic, else the stream's name. */
  getPattern(): string {
    return this.pattern;
  }

  /**
   * Whether the entry was delivered before and is handed over again: taken
   * over with `XAUTOCLAIM` after another delivery was left unacknowledged,
   * or read back from this consumer's own pending entries (at `listen`, or
   * once its connection came back).
   */
  isRedelivery(): boolean {
    return this.claimed;
  }

  /** The arguments, as Nest's transport contexts expose them. */
  getArgs(): [string, string, string | undefined, string, boolean] {
    return [this.stream, this.messageId, this.eventId, this.pattern, this.claimed];
  }
}
