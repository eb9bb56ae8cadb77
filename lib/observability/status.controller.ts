import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Type,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { ActiveFault, FaultInjector } from '../features/fault-injection/fault-injector';
import { FaultSpec } from '../features/fault-injection/fault-injection.options';
import { LoadShedder, SHED_REASONS, ShedReason } from '../features/load-shedding/load-shedder';
import { Priority, PRIORITY_LEVELS, PriorityLevel } from '../features/load-shedding/priority.decorator';
import { RecordedEvent, StatusPolicy } from './event-journal';
import { FAULTS_DISABLED } from '../features/fault-injection/fault-injection.messages';
import {
  CONFIG_BODY_NOT_AN_OBJECT,
  INVALID_UPDATE_STATE,
  UNKNOWN_CONFIG_ROUTE,
  UNKNOWN_STATUS_INSTANCE,
  UNKNOWN_STATUS_ROUTE,
  NO_KEYS_ROUTE,
} from './observability.messages';
import type { ReconfigurablePolicy } from '../kernel/config-change';
import { isPlainObject } from '../config/plain-object';
import { OperatorRouteError, OperatorRouteFilter } from './operator-problem';
import { GuardLike } from './observability.options';
import { BREAKER_UPDATES, BreakerUpdate, InstanceStatus, ResilienceStatus } from './resilience-status';

interface Resource {
  readonly policy: StatusPolicy;
  /** The property the response carries the list in, as Spring Boot Actuator names it. */
  readonly key: string;
  readonly events: boolean;
}

/** The routes under the status path, as Resilience4j's actuator endpoints name them. */
const RESOURCES: Readonly<Record<string, Resource>> = {
  circuitbreakers: { policy: 'circuitBreaker', key: 'circuitBreakers', events: false },
  circuitbreakerevents: { policy: 'circuitBreaker', key: 'circuitBreakerEvents', events: true },
  retries: { policy: 'retry', key: 'retries', events: false },
  retryevents: { policy: 'retry', key: 'retryEvents', events: true },
  bulkheads: { policy: 'bulkhead', key: 'bulkheads', events: false },
  bulkheadevents: { policy: 'bulkhead', key: 'bulkheadEvents', events: true },
  timelimiters: { policy: 'timeLimiter', key: 'timeLimiters', events: false },
  timelimiterevents: { policy: 'timeLimiter', key: 'timeLimiterEvents', events: true },
  ratelimiters: { policy: 'rateLimiter', key: 'rateLimiters', events: false },
  ratelimiterevents: { policy: 'rateLimiter', key: 'rateLimiterEvents', events: true },
  fallbacks: { policy: 'fallback', key: 'fallbacks', events: false },
  fallbackevents: { policy: 'fallback', key: 'fallbackEvents', events: true },
  caches: { policy: 'cache', key: 'caches', events: false },
  cacheevents: { policy: 'cache', key: 'cacheEvents', events: true },
};

const LISTS = Object.values(RESOURCES).filter((r) => !r.events);

/**
 * The routes whose instances take a config change (`PATCH <resource>/:name/config`), as the status routes name them.
 * Hedges have no status route (their counters are in the metrics), so they change through the registry alone.
 */
const CONFIG_RESOURCES: Readonly<
  Record<string, { readonly policy: Exclude<ReconfigurablePolicy, 'hedge'>; readonly key: string }>
> = {
  circuitbreakers: { policy: 'circuitBreaker', key: 'circuitBreakers' },
  retries: { policy: 'retry', key: 'retries' },
  bulkheads: { policy: 'bulkhead', key: 'bulkheads' },
  ratelimiters: { policy: 'rateLimiter', key: 'rateLimiters' },
  timelimiters: { policy: 'timeLimiter', key: 'timeLimiters' },
  caches: { policy: 'cache', key: 'caches' },
};

/** What `GET <status path>/loadshedding` answers. */
export interface LoadSheddingStatus {
  /** The concurrency limit in force (`null` without one). */
  readonly limit: number | null;
  readonly inflight: number;
  /** The event loop's delay over the last sampling period, in ms. */
  readonly eventLoopDelayMs: number;
  /** Whether `normal` requests are being refused. */
  readonly overloaded: boolean;
  /** Requests refused so far, by reason and class. */
  readonly shed: Readonly<Record<ShedReason, Readonly<Record<PriorityLevel, number>>>>;
}

function loadSheddingStatus(shedder: LoadShedder): LoadSheddingStatus {
  const shed = {} as Record<ShedReason, Record<PriorityLevel, number>>;
  for (const reason of SHED_REASONS) {
    shed[reason] = {} as Record<PriorityLevel, number>;
    for (const priority of PRIORITY_LEVELS) shed[reason][priority] = shedder.shed(reason, priority);
  }
  const limit = shedder.limit;
  return {
    limit: Number.isFinite(limit) ? limit : null,
    inflight: shedder.inflight,
    eventLoopDelayMs: shedder.eventLoopDelayMs,
    overloaded: shedder.overloaded,
    shed,
  };
}

/** The resources whose instances may have keys of their own (`GET …/:name/keys`). */
const KEYED_RESOURCES = Object.keys(RESOURCES).filter((r) => !RESOURCES[r].events);

function resourceOf(resource: string): Resource {
  const found = Object.prototype.hasOwnProperty.call(RESOURCES, resource) ? RESOURCES[resource] : undefined;
  if (found === undefined) throw new OperatorRouteError(404, UNKNOWN_STATUS_ROUTE(resource, Object.keys(RESOURCES)));
  return found;
}

/** `GET /faults`: whether fault injection is on, and the faults in force. */
interface FaultsStatus {
  readonly enabled: boolean;
  readonly faults: object[];
}

/** The faults in force as JSON: an error class given as a class is shown by its name. */
function faultsStatus(faults: FaultInjector): FaultsStatus {
  const json = (fault: ActiveFault): object => {
    const error = fault.error;
    return error !== undefined && typeof error.error === 'function'
      ? { ...fault, error: { rate: error.rate, error: error.error.name } }
      : fault;
  };
  return { enabled: faults.enabled, faults: faults.active().map(json) };
}

/**
 * The read-only status controller at `path`: `GET /` (every instance),
 * `GET /circuitbreakers`, `/retries`, `/bulkheads`, `/timelimiters`, `/ratelimiters`,
 * `/fallbacks` (each `/:name` too) and their `…events` counterparts, and
 * `GET /loadshedding` (the load shedder's limit, requests in flight and refusals), `GET /faults`
 * (the faults injected in force) and `GET /faultevents` (`/:name` too; the `FAULT_INJECTED` events).
 */
export function createStatusController(path: string, guards: readonly GuardLike[]): Type<unknown> {
  @Controller(path)
  // Operators must see the service when it is shedding load.
  @Priority('critical')
  @UseFilters(new OperatorRouteFilter())
  class ResilienceStatusController {
    constructor(
      readonly status: ResilienceStatus,
      readonly shedder: LoadShedder,
      readonly faults: FaultInjector,
    ) {}

    @Get('faults')
    activeFaults(): FaultsStatus {
      return faultsStatus(this.faults);
    }

    @Get('faultevents')
    allFaultEvents(): { faultEvents: RecordedEvent[] } {
      return { faultEvents: this.status.faultEvents() };
    }

    @Get('faultevents/:name')
    faultEvents(@Param('name') name: string): { faultEvents: RecordedEvent[] } {
      return { faultEvents: this.status.faultEvents(name) };
    }

    @Get()
    all(): Record<string, InstanceStatus[]> {
      const out: Record<string, InstanceStatus[]> = {};
      for (const { policy, key } of LISTS) out[key] = this.status.list(policy);
      return out;
    }

    @Get('loadshedding')
    loadShedding(): { loadShedding: LoadSheddingStatus } {
      return { loadShedding: loadSheddingStatus(this.shedder) };
    }

    @Get(':resource')
    list(@Param('resource') resource: string): Record<string, InstanceStatus[] | RecordedEvent[]> {
      const { policy, key, events } = resourceOf(resource);
      return { [key]: events ? this.status.events(policy) : this.status.list(policy) };
    }

    @Get(':resource/:name/keys')
    keys(@Param('resource') resource: string, @Param('name') name: string): Record<string, InstanceStatus[]> {
      const { policy, key, events } = resourceOf(resource);
      if (events) throw new OperatorRouteError(404, NO_KEYS_ROUTE(resource, KEYED_RESOURCES));
      // An unknown name is a 404 before the registry is asked, so that asking makes no instance of it.
      if (this.status.list(policy, name).length === 0)
        throw new OperatorRouteError(404, UNKNOWN_STATUS_INSTANCE(policy, name));
      return { [key]: this.status.keys(policy, name) };
    }

    @Get(':resource/:name')
    one(
      @Param('resource') resource: string,
      @Param('name') name: string,
    ): Record<string, InstanceStatus[] | RecordedEvent[]> {
      const { policy, key, events } = resourceOf(resource);
      const instances = this.status.list(policy, name);
      if (instances.length === 0) throw new OperatorRouteError(404, UNKNOWN_STATUS_INSTANCE(policy, name));
      return { [key]: events ? this.status.events(policy, name) : instances };
    }
  }
  if (guards.length > 0) UseGuards(...guards)(ResilienceStatusController);
  return ResilienceStatusController;
}

/**
 * The state-changing status routes at `path`, behind `guards`:
 * `POST /circuitbreakers/:name` with `{ "updateState": "FORCE_OPEN" | "CLOSE" | "DISABLE" | "METRICS_ONLY" }`;
 * `PATCH /{circuitbreakers|retries|bulkheads|ratelimiters|timelimiters|caches}/:name/config` with the settings to
 * change (`{ "failureRateThreshold": 30 }`, checked as at startup: a bad one is a 400 naming the key);
 * `POST /faults/:name` with a fault (`{ "error": { "rate": 1, "error": 503 }, "for": "5m" }`),
 * `DELETE /faults/:name` and `DELETE /faults` (fault injection must be enabled).
 */
export function createStatusAdminController(path: string, guards: readonly GuardLike[]): Type<unknown> {
  @Controller(path)
  // Operators must see the service when it is shedding load.
  @Priority('critical')
  @UseGuards(...guards)
  @UseFilters(new OperatorRouteFilter())
  class ResilienceStatusAdminController {
    constructor(
      readonly status: ResilienceStatus,
      readonly faults: FaultInjector,
    ) {}

    @Post('faults/:name')
    @HttpCode(200)
    inject(@Param('name') name: string, @Body() body: unknown): FaultsStatus {
      const { for: lasting, ...fault } = (body ?? {}) as FaultSpec & { for?: number | string };
      if (!this.faults.enabled) throw new OperatorRouteError(409, FAULTS_DISABLED(name));
      try {
        this.faults.inject(name, fault, { for: lasting });
      } catch (error) {
        throw new OperatorRouteError(400, (error as Error).message);
      }
      return faultsStatus(this.faults);
    }

    @Delete('faults/:name')
    @HttpCode(200)
    clearFault(@Param('name') name: string): FaultsStatus {
      this.faults.clear(name);
      return faultsStatus(this.faults);
    }

    @Delete('faults')
    @HttpCode(200)
    clearFaults(): FaultsStatus {
      this.faults.clear();
      return faultsStatus(this.faults);
    }

    @Patch(':resource/:name/config')
    @HttpCode(200)
    reconfigure(
      @Param('resource') resource: string,
      @Param('name') name: string,
      @Body() body: unknown,
    ): Record<string, InstanceStatus[]> {
      const found = Object.hasOwn(CONFIG_RESOURCES, resource) ? CONFIG_RESOURCES[resource] : undefined;
      if (found === undefined)
        throw new OperatorRouteError(404, UNKNOWN_CONFIG_ROUTE(resource, Object.keys(CONFIG_RESOURCES)));
      const { policy, key } = found;
      if (this.status.list(policy, name).length === 0)
        throw new OperatorRouteError(404, UNKNOWN_STATUS_INSTANCE(policy, name));
      if (!isPlainObject(body)) throw new OperatorRouteError(400, CONFIG_BODY_NOT_AN_OBJECT(policy, name));
      try {
        return { [key]: this.status.reconfigure(policy, name, body) };
      } catch (error) {
        throw new OperatorRouteError(400, (error as Error).message);
      }
    }

    @Post('circuitbreakers/:name')
    @HttpCode(200)
    update(@Param('name') name: string, @Body() body: unknown): { circuitBreakers: InstanceStatus[] } {
      const update = (body as { updateState?: unknown } | undefined)?.updateState;
      if (typeof update !== 'string' || !Object.prototype.hasOwnProperty.call(BREAKER_UPDATES, update)) {
        throw new OperatorRouteError(400, INVALID_UPDATE_STATE(update, Object.keys(BREAKER_UPDATES)));
      }
      const updated = this.status.updateBreakers(name, update as BreakerUpdate);
      if (updated.length === 0) throw new OperatorRouteError(404, UNKNOWN_STATUS_INSTANCE('circuitBreaker', name));
      return { circuitBreakers: updated };
    }
  }
  return ResilienceStatusAdminController;
}
