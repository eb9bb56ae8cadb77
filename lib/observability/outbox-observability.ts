import { Body, Controller, Get, HttpCode, Param, Post, Type, UseFilters, UseGuards } from '@nestjs/common';
import { Priority } from '../features/load-shedding/priority.decorator';
import { Collector, FamilyDefinition } from './metric-family';
import { GuardLike } from './observability.options';
import { OperatorRouteError, OperatorRouteFilter } from './operator-problem';
import { Outbox } from '../features/outbox/outbox';
import { Duration, parseDuration } from '../config/duration';
import {
  BAD_HEALTH_OPTION,
  OUTBOX_LAG,
  OUTBOX_NOT_CONFIGURED,
  OUTBOX_PARKED,
  UNKNOWN_PARKED_EVENT,
} from '../features/outbox/outbox.messages';
import { OutboxPublishResult } from '../features/outbox/outbox-relay';
import { readReplaySelection } from '../features/outbox/outbox-replay';
import { OutboxReplaySelection } from '../features/outbox/outbox-store';
import { OutboxEventState, OutboxStats } from '../features/outbox/outbox.types';

/** The outbox's series families. */
export const OUTBOX_FAMILIES = {
  pending: {
    name: 'resilience4nest_outbox_pending',
    type: 'gauge',
    combine: 'max',
    help: 'Outbox events not yet published (in flight included, parked excluded)',
  },
  lag: {
    name: 'resilience4nest_outbox_oldest_pending_age_seconds',
    type: 'gauge',
    combine: 'max',
    help: 'Age of the oldest outbox event not yet published: the relay lag',
  },
  published: {
    name: 'resilience4nest_outbox_published_total',
    type: 'counter',
    combine: 'sum',
    help: "Outbox publish attempts by this process's relay, by topic and result",
  },
  parked: {
    name: 'resilience4nest_outbox_parked',
    type: 'gauge',
    combine: 'max',
    help: 'Outbox events parked after maxAttempts failures, waiting for a requeue',
  },
} as const satisfies Record<string, FamilyDefinition>;

/** The collectors reading `outbox` at scrape time: the backlog as last read (every poll interval) and the publish counts. */
export function outboxCollectors(outbox: Outbox): Array<readonly [FamilyDefinition, Collector]> {
  const stats = (read: (s: OutboxStats) => number): Collector => {
    return (emit) => {
      const last = outbox.lastStats;
      if (last !== undefined) emit({}, read(last));
    };
  };
  return [
    [OUTBOX_FAMILIES.pending, stats((s) => s.pending)],
    [OUTBOX_FAMILIES.lag, stats((s) => s.oldestPendingAgeMs / 1000)],
    [OUTBOX_FAMILIES.parked, stats((s) => s.parked)],
    [
      OUTBOX_FAMILIES.published,
      (emit) => {
        for (const [topic, results] of outbox.published)
          for (const [result, count] of results) emit({ topic, result }, count);
      },
    ],
  ];
}

/** What `GET <status path>/outbox` answers. */
export interface OutboxStatus {
  /** Events not yet published. */
  readonly pending: number;
  /** Events parked after `maxAttempts` failures. */
  readonly parked: number;
  /** Age of the oldest pending event, in seconds. */
  readonly oldestPendingAgeSeconds: number;
  /** Whether this process runs a relay. */
  readonly relay: boolean;
  /** Publish outcomes of this process's relay, by topic and result. */
  readonly published: Readonly<Record<string, Partial<Record<OutboxPublishResult, number>>>>;
}

/** A parked event as the status endpoint lists it: no payload and no headers (request data stays out). */
export interface ParkedEventStatus {
  /** The event id. */
  readonly id: string;
  /** The event's topic. */
  readonly topic: string;
  /** The ordering key (later events of this key wait behind a parked one). */
  readonly key: string | null;
  /** Always `parked` in this list. */
  readonly state: OutboxEventState;
  /** Failed relay passes. */
  readonly attempts: number;
  /** The last publish error: its class and message. */
  readonly lastError: string | undefined;
  /** When the event was added, in ms since the epoch. */
  readonly occurredAt: number;
}

/** The outbox's status now. */
export async function outboxStatus(outbox: Outbox): Promise<OutboxStatus> {
  const stats = await outbox.stats();
  const published: Record<string, Partial<Record<OutboxPublishResult, number>>> = {};
  for (const [topic, results] of outbox.published) published[topic] = Object.fromEntries(results);
  return {
    pending: stats.pending,
    parked: stats.parked,
    oldestPendingAgeSeconds: stats.oldestPendingAgeMs / 1000,
    relay: outbox.relay !== undefined,
    published,
  };
}

function requireOutbox(outbox: Outbox, route: string): Outbox {
  if (!outbox.configured) throw new OperatorRouteError(404, OUTBOX_NOT_CONFIGURED(route));
  return outbox;
}

/**
 * The read-only outbox routes under the status path: `GET /outbox` (backlog,
 * lag, publish counts) and `GET /outbox/parked` (parked events, without
 * their payloads).
 */
export function createOutboxStatusController(path: string, guards: readonly GuardLike[]): Type<unknown> {
  @Controller(path)
  // Operators must see the service when it is shedding load.
  @Priority('critical')
  @UseFilters(new OperatorRouteFilter())
  class OutboxStatusController {
    constructor(readonly outbox: Outbox) {}

    @Get('outbox')
    async status(): Promise<{ outbox: OutboxStatus }> {
      return { outbox: await outboxStatus(requireOutbox(this.outbox, `GET ${path}/outbox`)) };
    }

    @Get('outbox/parked')
    async parked(): Promise<{ parked: ParkedEventStatus[] }> {
      const rows = await requireOutbox(this.outbox, `GET ${path}/outbox/parked`).parked();
      return {
        parked: rows.map(({ id, topic, key, state, attempts, lastError, occurredAt }) => ({
          id,
          topic,
          key,
          state,
          attempts,
          lastError,
          occurredAt,
        })),
      };
    }
  }
  if (guards.length > 0) UseGuards(...guards)(OutboxStatusController);
  return OutboxStatusController;
}

/**
 * The guarded outbox routes: `POST /outbox/parked/:id/requeue` puts a
 * parked event back in line; `POST /outbox/replay` with a JSON body
 * `{ ids?, topic?, since? }` re-sends sent events and answers `{ replayed }`.
 */
export function createOutboxAdminController(path: string, guards: readonly GuardLike[]): Type<unknown> {
  @Controller(path)
  @Priority('critical')
  @UseGuards(...guards)
  @UseFilters(new OperatorRouteFilter())
  class OutboxAdminController {
    constructor(readonly outbox: Outbox) {}

    @Post('outbox/parked/:id/requeue')
    @HttpCode(200)
    async requeue(@Param('id') id: string): Promise<{ requeued: string }> {
      const outbox = requireOutbox(this.outbox, `POST ${path}/outbox/parked/:id/requeue`);
      if (!(await outbox.requeue(id))) throw new OperatorRouteError(404, UNKNOWN_PARKED_EVENT(id));
      return { requeued: id };
    }

    @Post('outbox/replay')
    @HttpCode(200)
    async replay(@Body() body: unknown): Promise<{ replayed: number }> {
      const outbox = requireOutbox(this.outbox, `POST ${path}/outbox/replay`);
      let selection: OutboxReplaySelection;
      try {
        selection = readReplaySelection(body);
      } catch (error) {
        throw new OperatorRouteError(400, (error as Error).message);
      }
      return { replayed: await outbox.replay(selection) };
    }
  }
  return OutboxAdminController;
}

/** Options of `ResilienceHealthIndicator.checkOutbox`. */
export interface OutboxHealthOptions {
  /** Down when the oldest pending event is older than this. */
  maxLag: Duration;
  /** Down when more events than this are parked. Default: parked events do not make the check fail. */
  maxParked?: number;
}

/** What `checkOutbox` reports. */
export interface OutboxHealthData {
  /** Events not yet published. */
  readonly pending: number;
  /** Events parked after `maxAttempts` failures. */
  readonly parked: number;
  /** Age of the oldest pending event, in ms. */
  readonly lagMs: number;
  /** The `maxLag` checked against, in ms. */
  readonly maxLagMs: number;
  /** Why the check is down, when it is. */
  readonly reason?: string;
}

/** The outbox's health: its data, and whether it is down. */
export async function outboxHealth(
  outbox: Outbox | undefined,
  options: OutboxHealthOptions,
): Promise<{ readonly down: boolean; readonly data: OutboxHealthData }> {
  if (outbox === undefined || !outbox.configured)
    throw new Error(OUTBOX_NOT_CONFIGURED('ResilienceHealthIndicator.checkOutbox'));
  const maxLagMs = parseDuration(options?.maxLag);
  if (maxLagMs === undefined) throw new Error(BAD_HEALTH_OPTION('maxLag', 'a duration', options?.maxLag));
  const maxParked = options.maxParked ?? Number.POSITIVE_INFINITY;
  if (!(maxParked >= 0)) throw new Error(BAD_HEALTH_OPTION('maxParked', 'a number >= 0', options.maxParked));
  const stats = await outbox.stats();
  const data = { pending: stats.pending, parked: stats.parked, lagMs: stats.oldestPendingAgeMs, maxLagMs };
  if (stats.oldestPendingAgeMs > maxLagMs)
    return { down: true, data: { ...data, reason: OUTBOX_LAG(stats.oldestPendingAgeMs, maxLagMs) } };
  if (stats.parked > maxParked)
    return { down: true, data: { ...data, reason: OUTBOX_PARKED(stats.parked, maxParked) } };
  return { down: false, data };
}
