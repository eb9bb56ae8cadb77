import { describe } from '../config/config.messages';
import { PREFIX } from '../kernel/resilience.messages';
import { OutboxEvent } from '../features/outbox/outbox.types';
import { streamEntryFields } from '../features/outbox/redis-streams-message';
import { DurableOutboxPublisher, durablePublisher } from '../features/outbox/transports/delivery-guarantee';

const PLACE = 'RedisStreamsPublisher';

/** The command the publisher sends; an `ioredis` `Redis` (or `Cluster`) client provides it. */
export interface RedisStreamsPublisherClient {
  /** `XADD key [MAXLEN ~ n] * field value …`: the new entry's id, or `null` when none was added. */
  xadd(key: string, ...args: (string | number)[]): Promise<string | null>;
}

/** Options of {@link RedisStreamsPublisher}. */
export interface RedisStreamsPublisherOptions {
  /** An `ioredis` client. */
  readonly client: RedisStreamsPublisherClient;
  /** The stream every event is added to; default the event's topic (one stream per `@EventPattern`). */
  readonly stream?: string;
  /** Trims each stream to about this many entries (`MAXLEN ~`); default no trimming. */
  readonly maxLen?: number;
}

/**
 * An outbox publisher that adds each event to a Redis stream with `XADD`
 * (the stream named by its topic unless `stream` is given), as fields
 * `id`, `topic` and `data` (the {@link OutboxEnvelope} as JSON, the same
 * envelope a `ClientProxy` publisher sends). A publish is done only when
 * Redis answered the entry's id; the entry then waits in the stream until
 * a consumer group acknowledges it, so consumers read through
 * `RedisStreamsServer` get every event at least once, also those
 * published while they were down.
 *
 * @throws Error when an option is invalid, naming it
 * @example
 * ```ts
 * outbox: { store: new PostgresOutboxStore({ pool }), publisher: RedisStreamsPublisher({ client: new Redis(url) }) }
 * ```
 */
export function RedisStreamsPublisher(options: RedisStreamsPublisherOptions): DurableOutboxPublisher {
  if (options === null || typeof options !== 'object')
    throw new Error(`${PREFIX}: ${PLACE}: options must be an object ({ client }), got ${describe(options)}`);
  const { client, stream, maxLen } = options;
  if (client === null || typeof client !== 'object' || typeof client.xadd !== 'function')
    throw new Error(
      `${PREFIX}: ${PLACE}: option 'client' must be an ioredis client (with xadd), got ${describe(client)}`,
    );
  if (stream !== undefined && (typeof stream !== 'string' || stream === ''))
    throw new Error(`${PREFIX}: ${PLACE}: option 'stream' must be a non-empty string, got ${describe(stream)}`);
  if (maxLen !== undefined && !(Number.isSafeInteger(maxLen) && maxLen >= 1))
    throw new Error(`${PREFIX}: ${PLACE}: option 'maxLen' must be an integer of at least 1, got ${describe(maxLen)}`);
  const trim = maxLen === undefined ? [] : ['MAXLEN', '~', maxLen];
  return durablePublisher(async (event: OutboxEvent) => {
    const target = stream ?? event.topic;
    const id = await client.xadd(target, ...trim, '*', ...streamEntryFields(event));
    if (typeof id !== 'string' || id === '')
      throw new Error(`${PREFIX}: ${PLACE}: XADD to stream '${target}' answered no entry id for event ${event.id}`);
  }, {});
}
