import { Logger } from '@nestjs/common';
import { isObservable, lastValueFrom } from 'rxjs';
import { describe } from '../../config/config.messages';
import { Duration } from '../../config/duration';
import { durationOption, GivenOptions, integerOption, OptionReader } from '../../config/option-readers';
import { Clock, systemClock, TimerHandle } from '../../kernel/clock';
import { loadOptionalPeer, OptionalPeer } from '../../kernel/optional-peer';
import { PREFIX } from '../../kernel/resilience.messages';
import { readStreamEntry, RedisStreamsContext } from './redis-streams-message';

/** The transport id of `RedisStreamsServer`, for `@EventPattern(pattern, REDIS_STREAMS_TRANSPORT)` in hybrid applications. */
export const REDIS_STREAMS_TRANSPORT: unique symbol = Symbol('REDIS_STREAMS_TRANSPORT');

/** A connection as the server uses it; an `ioredis` `Redis` client provides it. */
export interface RedisStreamsServerConnection {
  /** Sends a command (`XREADGROUP`, `XACK`, `XAUTOCLAIM`, `XGROUP`). */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** Closes the connection at once; a command waiting on it fails. */
  disconnect(): void;
  /**
   * Registers a listener of `'ready'`, which an `ioredis` client emits each
   * time its connection is (re)established. Optional: without it the server
   * learns of a lost connection only from a read that failed.
   */
  on?(event: 'ready', listener: () => void): unknown;
}

/** The client given to the server; an `ioredis` `Redis` client provides it. */
export interface RedisStreamsServerClient extends RedisStreamsServerConnection {
  /** A new connection with the same settings, for the blocking reads. */
  duplicate(): RedisStreamsServerConnection;
}

/** Options of `RedisStreamsServer`. */
export interface RedisStreamsServerOptions {
  /** An `ioredis` client: acknowledgements and claims go through it, and its `duplicate()` blocks in `XREADGROUP`. It is not closed by the server. */
  readonly client: RedisStreamsServerClient;
  /** The consumer group: each group gets every entry once; the consumers of a group share them. Created (with the stream) when missing. */
  readonly group: string;
  /** This consumer's name within the group, unique per running process. */
  readonly consumer: string;
  /** How long an entry stays unacknowledged before another consumer takes it over with `XAUTOCLAIM`. Longer than the slowest handling. Default 30s. */
  readonly claimIdle?: Duration;
  /** How often the server looks for entries idle longer than `claimIdle`. Default `claimIdle`. */
  readonly claimInterval?: Duration;
  /** How long one `XREADGROUP` blocks waiting for entries. Default 5s. */
  readonly block?: Duration;
  /** Most entries read or claimed per command. Default 10. */
  readonly count?: number;
  /** The streams read; default the server's `@EventPattern` strings. */
  readonly streams?: readonly string[];
  /** The source of time for the claim schedule and the pause after a failed read; default the system clock. */
  readonly clock?: Clock;
}

/** A handler as Nest registers it on a server: called with the payload and the context. */
export type RedisStreamsEventHandler = ((data: unknown, context: unknown) => Promise<unknown>) & {
  isEventHandler?: boolean;
};

/**
 * The part of Nest's `Server` (of `@nestjs/microservices`) that
 * `RedisStreamsServer` uses, typed here so the library loads without
 * that package; at run time the class extends `Server` itself.
 */
export interface NestServerBase {
  /** The handlers Nest registered, by pattern. */
  getHandlers(): Map<string, RedisStreamsEventHandler>;
  /** The handler of a pattern, or `null`. */
  getHandlerByPattern(pattern: string): RedisStreamsEventHandler | null;
}

const MICROSERVICES: OptionalPeer<{ Server: new () => NestServerBase }> = {
  name: '@nestjs/microservices',
  // Loaded when the first server is made, never imported: applications without microservices do not need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@nestjs/microservices'),
};

const PLACE = 'RedisStreamsServer options';
const FAILED_READ_PAUSE_MS = 1000;
/** Most `XAUTOCLAIM` rounds per stream and pass: with `count` entries each, a pass is bounded. */
const CLAIM_ROUNDS = 100;
const positive = durationOption({ positive: true });
const nameOption: OptionReader<string> = (value, _place, key) => {
  if (typeof value === 'string' && value.trim() !== '') return value;
  throw new Error(`${PREFIX}: invalid ${PLACE}: key '${key}' must be a non-empty string, got ${describe(value)}`);
};

/**
 * A Nest custom transport strategy that consumes Redis streams through a
 * consumer group, made by `RedisStreamsServer(options)`. At run time it is a
 * `Server` of `@nestjs/microservices`.
 */
export interface RedisStreamsServer extends NestServerBase {
  /** Nest's transport id of this server ({@link REDIS_STREAMS_TRANSPORT}). */
  readonly transportId: symbol;
  /**
   * Creates the missing groups, takes over what is idle longer than
   * `claimIdle`, and starts reading; calls `callback` once reading began,
   * or with the error that prevented it.
   */
  listen(callback: (error?: unknown) => void): void;
  /** Stops reading and claiming, disconnects the reading connection and waits for the entry being handled. */
  close(): Promise<void>;
  /** Registers a listener of `'error'`: a read, an acknowledgement or a claim that failed. */
  on(event: string, callback: (error: unknown) => void): void;
  /** The dedicated reading connection (after `listen`). */
  unwrap<T>(): T;
}

/**
 * A Nest custom transport that consumes Redis streams through a consumer
 * group: the durable counterpart of `RedisStreamsPublisher`. On `listen`
 * it creates the group where missing (`XGROUP CREATE … 0 MKSTREAM`, so a
 * new group reads what was published before it existed), then reads new
 * entries with `XREADGROUP … BLOCK` on a dedicated connection
 * (`client.duplicate()`) and hands each to the `@EventPattern` handler
 * named by its topic (else its stream), with the {@link OutboxEnvelope} as
 * the payload and a {@link RedisStreamsContext} as the context. An entry
 * is acknowledged (`XACK`) only after its handler succeeded: one whose
 * handler failed, or whose consumer died mid-handling, stays pending and
 * is taken over with `XAUTOCLAIM` once idle longer than `claimIdle`, by
 * this consumer or another of the group, and handled again. At `listen`,
 * and each time the reading connection comes back, the server first reads
 * the entries pending for its own consumer name (`XREADGROUP … 0`) and
 * handles those it is not handling already: a read whose reply was lost
 * with the connection leaves entries pending that no handler saw. Delivery is
 * therefore at least once; key the handler with
 * `@Idempotent({ key: outboxEventId })` for effects applied once.
 *
 * `close()` stops reading, disconnects the dedicated connection (a
 * blocked read ends at once) and waits for the entry being handled; the
 * given client stays open. Only event handlers are served: streams carry
 * no replies.
 *
 * @throws Error when an option is invalid, naming it, or when `@nestjs/microservices` is not installed
 * @example
 * ```ts
 * const app = await NestFactory.createMicroservice(ShippingModule, {
 *   strategy: RedisStreamsServer({ client: new Redis(url), group: 'shipping', consumer: `shipping-${process.pid}` }),
 * });
 * ```
 */
export function RedisStreamsServer(options: RedisStreamsServerOptions): RedisStreamsServer {
  return new StreamGroupServer(options);
}

/**
 * The members of Nest's `Server` that a `StreamGroupServer` has: the
 * class extends `Server` at run time, linked when the first instance is made.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
interface StreamGroupServer extends NestServerBase {}

/** The server `RedisStreamsServer(options)` makes. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
class StreamGroupServer implements RedisStreamsServer {
  readonly transportId: symbol = REDIS_STREAMS_TRANSPORT;
  private readonly client: RedisStreamsServerClient;
  private readonly group: string;
  private readonly consumer: string;
  private readonly claimIdleMs: number;
  private readonly claimIntervalMs: number;
  private readonly blockMs: number;
  private readonly count: number;
  private readonly givenStreams: readonly string[] | undefined;
  private readonly clock: Clock;
  private readonly log = new Logger('RedisStreamsServer');
  /** Entries a pass has taken, waiting their turn in it or being handled: another pass that read them leaves them. */
  private readonly taken = new Set<string>();
  private readonly errorListeners: Array<(error: unknown) => void> = [];
  private readonly warnedPatterns = new Set<string>();
  private reader: RedisStreamsServerConnection | undefined;
  private streams: readonly string[] = [];
  private closed = false;
  private failing = false;
  private claimTimer: TimerHandle;
  private pause: { timer: TimerHandle; resolve: () => void } | undefined;
  private running: Promise<void>[] = [];
  /** A read of this consumer's own pending entries under way, and whether another was asked for meanwhile. */
  private ownPending: { done: Promise<void>; again: boolean } | undefined;
  /** Acknowledgements sent and not yet answered, by entry: the next entry does not wait for them, `close` does. */
  private readonly acking = new Map<string, Promise<void>>();

  constructor(options: RedisStreamsServerOptions) {
    const given = new GivenOptions(options, PLACE, [
      'client',
      'group',
      'consumer',
      'claimIdle',
      'claimInterval',
      'block',
      'count',
      'streams',
      'clock',
    ]);
    const client = given.raw('client') as RedisStreamsServerClient;
    if (
      client === null ||
      typeof client !== 'object' ||
      typeof client.call !== 'function' ||
      typeof client.duplicate !== 'function'
    )
      throw new Error(
        `${PREFIX}: invalid ${PLACE}: key 'client' must be an ioredis client (with call and duplicate), got ${describe(client)}`,
      );
    const group = given.read('group', nameOption);
    const consumer = given.read('consumer', nameOption);
    if (group === undefined || consumer === undefined)
      throw new Error(
        `${PREFIX}: invalid ${PLACE}: keys 'group' and 'consumer' are required (the consumer group, and this process's name in it)`,
      );
    const streams = given.raw('streams');
    if (
      streams !== undefined &&
      !(Array.isArray(streams) && streams.length > 0 && streams.every((s) => typeof s === 'string' && s !== ''))
    )
      throw new Error(
        `${PREFIX}: invalid ${PLACE}: key 'streams' must be a non-empty array of stream names, got ${describe(streams)}`,
      );
    const clock = given.raw('clock') as Clock | undefined;
    if (clock !== undefined && (clock === null || typeof clock !== 'object' || typeof clock.setTimeout !== 'function'))
      throw new Error(`${PREFIX}: invalid ${PLACE}: key 'clock' must be a Clock, got ${describe(clock)}`);
    const claimIdleMs = given.read('claimIdle', positive) ?? 30_000;
    const claimIntervalMs = given.read('claimInterval', positive) ?? claimIdleMs;
    const blockMs = given.read('block', positive) ?? 5_000;
    const count = given.read('count', integerOption(1, 10_000)) ?? 10;
    const Server = linkToNestServer();
    // What Nest's constructor sets up (its handler map, logger, status subject) becomes this instance's own;
    // a field NestJS 12 declares but leaves undefined (transportId) does not hide this class's value.
    const base = Reflect.construct(Server, [], StreamGroupServer) as unknown as Record<string, unknown>;
    const own = this as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(base))
      if (value !== undefined || own[key] === undefined) own[key] = value;
    this.client = client;
    this.group = group;
    this.consumer = consumer;
    this.claimIdleMs = claimIdleMs;
    this.claimIntervalMs = claimIntervalMs;
    this.blockMs = blockMs;
    this.count = count;
    this.givenStreams = streams as readonly string[] | undefined;
    this.clock = clock ?? systemClock;
  }

  listen(callback: (error?: unknown) => void): void {
    this.start().then(
      () => callback(),
      (error: unknown) => callback(error),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clock.clearTimeout(this.claimTimer);
    if (this.pause !== undefined) {
      this.clock.clearTimeout(this.pause.timer);
      this.pause.resolve();
    }
    this.reader?.disconnect();
    await Promise.all(this.running);
    await Promise.all(this.acking.values());
  }

  on(event: string, callback: (error: unknown) => void): void {
    if (event === 'error') this.errorListeners.push(callback);
  }

  unwrap<T>(): T {
    return this.reader as T;
  }

  private async start(): Promise<void> {
    this.streams = this.givenStreams ?? this.eventPatterns();
    if (this.streams.length === 0) return;
    await this.createGroups();
    const reader = this.client.duplicate();
    this.reader = reader;
    // The reply to a read the server served can be lost with the connection: its entries are then pending for
    // this consumer, and the read sent again on the new connection returns only newer ones.
    let connectedBefore = false;
    reader.on?.('ready', () => {
      if (connectedBefore) void this.readOwnPending();
      connectedBefore = true;
    });
    this.running.push(
      this.claimPass().then(() => this.scheduleClaim()),
      this.readLoop(),
    );
  }

  /** The string patterns of the registered event handlers: the streams read by default. */
  private eventPatterns(): string[] {
    return [...this.getHandlers()].filter(([, handler]) => handler.isEventHandler === true).map(([pattern]) => pattern);
  }

  private async createGroups(): Promise<void> {
    for (const stream of this.streams) {
      try {
        await this.client.call('XGROUP', 'CREATE', stream, this.group, '0', 'MKSTREAM');
      } catch (error) {
        if (!/BUSYGROUP/.test(messageOf(error))) throw error;
      }
    }
  }

  /** Hands over this consumer's own pending entries (a previous run's), then reads new ones until closed. */
  private async readLoop(): Promise<void> {
    const reader = this.reader as RedisStreamsServerConnection;
    const ids = this.streams.map(() => '>');
    await this.readOwnPending();
    while (!this.closed) {
      let reply: unknown;
      try {
        reply = await this.readGroup(reader, ['BLOCK', this.blockMs, 'STREAMS', ...this.streams, ...ids]);
      } catch (error) {
        if (this.closed) return;
        await this.failed('read', error);
        void this.readOwnPending();
        continue;
      }
      this.failing = false;
      await this.handOver(streamsOf(reply), false);
    }
  }

  private scheduleClaim(): void {
    if (this.closed) return;
    this.claimTimer = this.clock.setTimeout(() => {
      const pass = this.claimPass().then(() => this.scheduleClaim());
      this.running.push(pass);
      void pass.finally(() => (this.running = this.running.filter((p) => p !== pass)));
    }, this.claimIntervalMs);
  }

  /**
   * Reads this consumer's own pending entries (`XREADGROUP … 0`) and hands
   * over those not being handled or acknowledged here; one read at a time,
   * another after it when asked for meanwhile.
   */
  private readOwnPending(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.ownPending !== undefined) {
      this.ownPending.again = true;
      return this.ownPending.done;
    }
    const done: Promise<void> = this.ownPendingPass().then(() => {
      const again = this.ownPending?.again === true;
      this.ownPending = undefined;
      this.running = this.running.filter((p) => p !== done);
      if (again) void this.readOwnPending();
    });
    this.ownPending = { done, again: false };
    this.running.push(done);
    return done;
  }

  /** `XREADGROUP` for this consumer on `connection`, at most `count` entries, with the given arguments after. */
  private readGroup(connection: RedisStreamsServerConnection, rest: (string | number)[]): Promise<unknown> {
    return connection.call('XREADGROUP', 'GROUP', this.group, this.consumer, 'COUNT', this.count, ...rest);
  }

  /** Handles this consumer's pending entries of every stream, oldest first, in bounded rounds. */
  private ownPendingPass(): Promise<void> {
    return this.pendingPass('0', async (stream, after) => {
      const reply = await this.readGroup(this.client, ['STREAMS', stream, after]);
      const entries = streamsOf(reply).find(([name]) => name === stream)?.[1] ?? [];
      return [entries.length < this.count ? undefined : entries[entries.length - 1][0], entries];
    });
  }

  /** Takes over and handles every entry of the group idle longer than `claimIdle`, in bounded rounds. */
  private claimPass(): Promise<void> {
    return this.pendingPass('0-0', async (stream, cursor) => {
      const reply = await this.client.call(
        'XAUTOCLAIM',
        stream,
        this.group,
        this.consumer,
        this.claimIdleMs,
        cursor,
        'COUNT',
        this.count,
      );
      const [next, entries] = reply as [string, StreamEntry[]];
      return [next === '0-0' ? undefined : next, entries];
    });
  }

  /**
   * Hands over, as redeliveries, the pending entries `page` answers for each
   * stream, page after page from `first` while it names a next cursor, in
   * a bounded number of rounds per stream. A failed page ends the
   * pass (the error is emitted); the next pass starts over.
   */
  private async pendingPass(
    first: string,
    page: (stream: string, cursor: string) => Promise<[next: string | undefined, entries: StreamEntry[]]>,
  ): Promise<void> {
    for (const stream of this.streams) {
      let cursor: string | undefined = first;
      for (let round = 0; cursor !== undefined && round < CLAIM_ROUNDS && !this.closed; round++) {
        let entries: StreamEntry[];
        try {
          [cursor, entries] = await page(stream, cursor);
        } catch (error) {
          this.emitError(error);
          return;
        }
        await this.handOver([[stream, entries]], true);
      }
    }
  }

  /**
   * Hands over, one after the other, the entries read that no other pass
   * has taken and none is acknowledging. They are taken at
   * once: passes run side by side (reads, claims, this consumer's own
   * pending entries) and may read the same entry, which only the first
   * hands over.
   */
  private async handOver(batch: ReadonlyArray<[string, readonly StreamEntry[]]>, claimed: boolean): Promise<void> {
    const mine: Array<[string, StreamEntry]> = [];
    for (const [stream, entries] of batch)
      for (const entry of entries) {
        const key = `${stream} ${entry[0]}`;
        if (this.taken.has(key) || this.acking.has(key)) continue;
        this.taken.add(key);
        mine.push([stream, entry]);
      }
    for (const [stream, [id, fields]] of mine) {
      try {
        // An entry trimmed away while pending: nothing left to handle.
        if (fields === null) this.ack(stream, id);
        else await this.deliver(stream, id, fields, claimed);
      } finally {
        // Acknowledged by now when it succeeded: the acknowledgement in flight keeps other passes off it.
        this.taken.delete(`${stream} ${id}`);
      }
    }
  }

  /** Hands one entry, taken by the caller, to its handler; acknowledges it only when the handler succeeded. */
  private async deliver(stream: string, id: string, fields: readonly string[], claimed: boolean): Promise<void> {
    const entry = readStreamEntry(fields);
    const pattern = entry.topic ?? stream;
    const handler = this.getHandlerByPattern(pattern);
    if (handler === null) {
      if (!this.warnedPatterns.has(pattern)) {
        this.warnedPatterns.add(pattern);
        this.log.warn(`no @EventPattern('${pattern}') handler for stream '${stream}': its entries stay pending`);
      }
      return;
    }
    try {
      const result = await handler(entry.data, new RedisStreamsContext(stream, id, entry.eventId, pattern, claimed));
      if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
    } catch (error) {
      this.log.warn(
        `entry ${id} of stream '${stream}' left pending for redelivery after ${this.claimIdleMs} ms: its handler failed (${messageOf(error)})`,
      );
      return;
    }
    this.ack(stream, id);
  }

  /** Sends `XACK` for the entry without holding up the next one: a round trip per entry would pace the consumer. */
  private ack(stream: string, id: string): void {
    const key = `${stream} ${id}`;
    const sent: Promise<void> = this.client
      .call('XACK', stream, this.group, id)
      .then(
        () => undefined,
        // Not acknowledged: the entry is claimed and handled again, and the idempotent handler absorbs it.
        (error: unknown) => this.emitError(error),
      )
      .finally(() => this.acking.delete(key));
    this.acking.set(key, sent);
  }

  /** A failed read: groups recreated when Redis lost them, the first failure of an episode logged, then a pause. */
  private async failed(what: string, error: unknown): Promise<void> {
    if (!this.failing) {
      this.failing = true;
      this.log.warn(`${what} from streams ${this.streams.join(', ')} failed, retrying: ${messageOf(error)}`);
    }
    this.emitError(error);
    if (/NOGROUP/.test(messageOf(error))) await this.createGroups().catch((e: unknown) => this.emitError(e));
    await new Promise<void>((resolve) => {
      this.pause = { timer: this.clock.setTimeout(resolve, FAILED_READ_PAUSE_MS), resolve };
    });
    this.pause = undefined;
  }

  private emitError(error: unknown): void {
    for (const listener of this.errorListeners) listener(error);
  }
}

/**
 * Makes `StreamGroupServer` a subclass of Nest's `Server`, once,
 * when the first instance is made, and answers `Server`. Loading
 * `@nestjs/microservices` only here lets the library load without it.
 */
function linkToNestServer(): new () => NestServerBase {
  const { Server } = loadOptionalPeer(MICROSERVICES, 'RedisStreamsServer');
  if (Object.getPrototypeOf(StreamGroupServer.prototype) !== Server.prototype) {
    Object.setPrototypeOf(StreamGroupServer, Server);
    Object.setPrototypeOf(StreamGroupServer.prototype, Server.prototype as object);
  }
  return Server;
}

/** An entry as Redis answers it: its id and fields, or `null` fields when it was trimmed away while pending. */
type StreamEntry = [id: string, fields: string[] | null];

/** The `[stream, entries]` pairs of an `XREADGROUP` reply (`null` when the block timed out or nothing is pending). */
function streamsOf(reply: unknown): Array<[string, StreamEntry[]]> {
  return Array.isArray(reply) ? (reply as Array<[string, StreamEntry[]]>) : [];
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : describe(error);
}
