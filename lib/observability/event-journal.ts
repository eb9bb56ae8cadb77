import type { PolicyTelemetry } from '../kernel/telemetry';
import { roundMs } from '../kernel/format-ms';
import { httpStatusOf } from '../kernel/error-status';
import { Unsubscribe } from '../kernel/events';
import type { FaultInjector } from '../features/fault-injection/fault-injector';
import { ObservedInstance } from './instance-catalog';

/** A policy the status endpoints report on. */
export type StatusPolicy = ObservedInstance['policy'];

/** One recorded event, as the `…events` endpoints serve it (Resilience4j's event type names). */
export interface RecordedEvent {
  /** The instance name. */
  readonly name: string;
  /** e.g. `SUCCESS`, `ERROR`, `STATE_TRANSITION`, `NOT_PERMITTED`, `RETRY`, `CALL_REJECTED`, `TIMEOUT`, `FALLBACK`, `FAULT_INJECTED`, `CONFIG_CHANGED`. */
  readonly type: string;
  /** When it happened (wall clock, ISO 8601). */
  readonly creationTime: string;
  readonly durationMs?: number;
  /** Class name of the error involved. */
  readonly errorClass?: string;
  /** HTTP status the error carries, if any. */
  readonly errorStatus?: number;
  /** `ErrorClass: message` of the error involved; only when the endpoints opt in (`errorMessages: true`), since messages may hold request data. */
  readonly errorMessage?: string;
  /** `FROM_TO_TO`, e.g. `CLOSED_TO_OPEN`. */
  readonly stateTransition?: string;
  /** Attempts made (retry). */
  readonly attempts?: number;
  /** Wait before the next attempt (retry). */
  readonly waitMs?: number;
  /** Why a retry stopped or a bulkhead refused. */
  readonly reason?: string;
  /** The error class whose fallback answered (`FALLBACK`), or what was injected: `latency`, `error` or `outcome` (`FAULT_INJECTED`). */
  readonly kind?: string;
}

/** The raw fields events carry; each is read only if present. */
interface RawEvent {
  readonly durationMs?: number;
  readonly error?: unknown;
  readonly from?: string;
  readonly to?: string;
  readonly attempt?: number;
  readonly attempts?: number;
  readonly waitMs?: number;
  readonly reason?: string;
  readonly errorClass?: { readonly name: string };
  readonly kind?: string;
}

/**
 * The last `capacity` events of one instance. Recording stores the event
 * object the policy already built, its type and the time, nothing else;
 * the JSON shape is made only when someone reads it.
 */
class EventRing {
  private readonly times: Float64Array;
  private readonly sequence: Float64Array;
  private readonly types: string[];
  private readonly events: RawEvent[];
  private next = 0;
  private size = 0;

  constructor(
    readonly name: string,
    private readonly capacity: number,
    private readonly counter: { value: number },
  ) {
    this.times = new Float64Array(capacity);
    this.sequence = new Float64Array(capacity);
    this.types = new Array<string>(capacity);
    this.events = new Array<RawEvent>(capacity);
  }

  push(type: string, event: RawEvent): void {
    const i = this.next;
    this.times[i] = Date.now();
    this.sequence[i] = this.counter.value++;
    this.types[i] = type;
    this.events[i] = event;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    if (this.size < this.capacity) this.size++;
  }

  /** Oldest first, with the journal-wide sequence number for merging. */
  read(into: Array<[number, RecordedEvent]>, withMessages: boolean): void {
    const start = (this.next - this.size + this.capacity) % this.capacity;
    for (let k = 0; k < this.size; k++) {
      const i = (start + k) % this.capacity;
      into.push([this.sequence[i], render(this.name, this.types[i], this.times[i], this.events[i], withMessages)]);
    }
  }
}

function render(name: string, type: string, at: number, event: RawEvent, withMessages: boolean): RecordedEvent {
  const error = event.error;
  return {
    name,
    type,
    creationTime: new Date(at).toISOString(),
    durationMs: event.durationMs === undefined ? undefined : roundMs(event.durationMs),
    errorClass: error === undefined ? undefined : errorClass(error),
    errorStatus: error === undefined ? undefined : httpStatusOf(error),
    errorMessage: error === undefined || !withMessages ? undefined : errorMessage(error),
    stateTransition: event.from === undefined ? undefined : `${event.from}_TO_${event.to}`,
    attempts: event.attempts ?? event.attempt,
    waitMs: event.waitMs,
    reason: event.reason,
    kind: event.errorClass?.name ?? event.kind,
  };
}

function errorClass(error: unknown): string {
  return error instanceof Error ? error.constructor.name : typeof error;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return `${error.constructor.name}: ${error.message}`;
  try {
    return String(error);
  } catch {
    return typeof error;
  }
}

/**
 * Subscribes to every event of one instance through its telemetry channel,
 * each under Resilience4j's event type name (`SUCCESS`, `STATE_TRANSITION`,
 * `RETRY`, `FALLBACK`…); returns the unsubscribe functions.
 */
export function subscribeEvents(
  observed: ObservedInstance,
  on: (type: string) => (event: object) => void,
): Unsubscribe[] {
  const channel: PolicyTelemetry = observed.instance;
  return channel.tapEvents((type) => on(type));
}

/**
 * The last N events of every instance (Resilience4j's
 * `eventConsumerBufferSize`), for the status endpoints. Recording costs a
 * listener call per event; it runs only when the status endpoints are on.
 */
export class EventJournal {
  private readonly rings = new Map<StatusPolicy, EventRing[]>();
  private readonly faultRings = new Map<string, EventRing>();
  private readonly counter = { value: 0 };

  /**
   * @param capacity - events kept per instance
   * @param withMessages - serve error messages too (they may hold request data)
   */
  constructor(
    private readonly capacity: number,
    private readonly withMessages = false,
  ) {}

  /** Starts recording the events of one instance; returns the unsubscribe functions. */
  record(observed: ObservedInstance): Unsubscribe[] {
    const ring = new EventRing(observed.name, this.capacity, this.counter);
    const list = this.rings.get(observed.policy) ?? [];
    list.push(ring);
    this.rings.set(observed.policy, list);
    return subscribeEvents(observed, (type) => (event) => ring.push(type, event));
  }

  /** Starts recording the `FAULT_INJECTED` events of `faults`, kept per instance name; returns the unsubscribe function. */
  recordFaults(faults: FaultInjector): Unsubscribe {
    return faults.onFaultInjected((event) => {
      let ring = this.faultRings.get(event.name);
      if (ring === undefined)
        this.faultRings.set(event.name, (ring = new EventRing(event.name, this.capacity, this.counter)));
      ring.push(event.type, event);
    });
  }

  /** The recorded events of `policy`'s instances (of `name` only, if given), oldest first. */
  events(policy: StatusPolicy, name?: string): RecordedEvent[] {
    return this.merge(this.rings.get(policy) ?? [], name);
  }

  /** The recorded `FAULT_INJECTED` events (of `name` only, if given), oldest first. */
  faultEvents(name?: string): RecordedEvent[] {
    return this.merge(this.faultRings.values(), name);
  }

  private merge(rings: Iterable<EventRing>, name: string | undefined): RecordedEvent[] {
    const collected: Array<[number, RecordedEvent]> = [];
    for (const ring of rings) if (name === undefined || ring.name === name) ring.read(collected, this.withMessages);
    return collected.sort((a, b) => a[0] - b[0]).map(([, event]) => event);
  }
}
