import { LoadShedder, SHED_REASONS } from '../features/load-shedding/load-shedder';
import { PRIORITY_LEVELS } from '../features/load-shedding/priority.decorator';
import { Collector, FamilyDefinition } from './metric-family';

/** The load shedder's series families. */
export const LOAD_SHEDDING_FAMILIES = {
  shed: {
    name: 'resilience4nest_shed_requests_total',
    type: 'counter',
    combine: 'sum',
    help: 'Requests the load shedder refused at the door, by reason and priority class',
  },
  limit: {
    name: 'resilience4nest_concurrency_limit',
    type: 'gauge',
    combine: 'sum',
    help: 'The concurrency limit in force (fixed cap or adaptive limit)',
  },
  inflight: {
    name: 'resilience4nest_inflight_requests',
    type: 'gauge',
    combine: 'sum',
    help: 'Requests admitted by the load shedder and not yet answered',
  },
  eventLoopDelay: {
    name: 'resilience4nest_event_loop_delay_seconds',
    type: 'gauge',
    combine: 'max',
    help: "The event loop's maximum delay over the last sampling period",
  },
} as const satisfies Record<string, FamilyDefinition>;

/** The collectors that read `shedder` at scrape time (no cost on the request path). */
export function loadSheddingCollectors(shedder: LoadShedder): Array<readonly [FamilyDefinition, Collector]> {
  return [
    [
      LOAD_SHEDDING_FAMILIES.shed,
      (emit) => {
        for (const reason of SHED_REASONS)
          for (const priority of PRIORITY_LEVELS) emit({ reason, priority }, shedder.shed(reason, priority));
      },
    ],
    [
      LOAD_SHEDDING_FAMILIES.limit,
      (emit) => {
        if (Number.isFinite(shedder.limit)) emit({}, shedder.limit);
      },
    ],
    [LOAD_SHEDDING_FAMILIES.inflight, (emit) => emit({}, shedder.inflight)],
    [LOAD_SHEDDING_FAMILIES.eventLoopDelay, (emit) => emit({}, shedder.eventLoopDelayMs / 1000)],
  ];
}
