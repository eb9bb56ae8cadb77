import { Unsubscribe } from '../kernel/events';
import { subscribeEvents } from '../observability/event-journal';
import { watchInstances } from '../observability/instance-catalog';
import { ResilienceRegistry } from '../registry/resilience.registry';

/** One event a {@link EventRecorder} saw. */
export interface RecordedPolicyEvent {
  /** The policy of the instance: `retry`, `circuitBreaker`, `bulkhead`, `timeLimiter`, `rateLimiter`, `fallback`, or `faults`. */
  readonly policy: string;
  /** The instance name (`Class.method` for a decorated method's fallback). */
  readonly name: string;
  /** Resilience4j's event type name: `RETRY`, `STATE_TRANSITION`, `NOT_PERMITTED`, `TIMEOUT`, `FALLBACK`, `FAULT_INJECTED`… */
  readonly type: string;
  /** The registry clock's reading when it happened (ms). */
  readonly at: number;
  /** The event object the policy emitted. */
  readonly event: object;
}

/** Every policy event of one registry, in order, for assertions. Made by {@link recordEvents}. */
export interface EventRecorder {
  /** The events so far, oldest first. */
  readonly events: readonly RecordedPolicyEvent[];
  /** `policy name TYPE` per event (a state transition adds `FROM_TO_TO`): compact for `toEqual`. */
  lines(): string[];
  /** Forgets the events recorded so far. */
  clear(): void;
  /** Stops recording (instances made later are not watched either). */
  stop(): void;
}

/**
 * Records every event of every instance of `registry` — those that exist,
 * those made later, the instances of keys (their events carry `key`), the fallbacks of decorated methods and pipelines, and
 * injected faults — in the order they happen.
 *
 * @example
 * ```ts
 * const recorder = recordEvents(moduleRef.get(ResilienceRegistry));
 * await clock.runUntilSettled(client.quote('sku-1'));
 * expect(recorder.lines()).toContain('circuitBreaker pricing STATE_TRANSITION CLOSED_TO_OPEN');
 * recorder.stop();
 * ```
 */
export function recordEvents(registry: ResilienceRegistry): EventRecorder {
  const events: RecordedPolicyEvent[] = [];
  const subscriptions: Unsubscribe[] = [];
  const clock = registry.clock;
  const push = (policy: string, name: string) => (type: string) => (event: object) =>
    void events.push({ policy, name, type, at: clock.now(), event });
  subscriptions.push(
    watchInstances(
      registry,
      registry.fallbacks,
      (observed) => subscriptions.push(...subscribeEvents(observed, push(observed.policy, observed.name))),
      { keys: true },
    ),
  );
  subscriptions.push(registry.faults.onFaultInjected((event) => push('faults', event.name)(event.type)(event)));
  return {
    events,
    lines: () =>
      events.map(({ policy, name, type, event }) => {
        const { from, to } = event as { from?: string; to?: string };
        return `${policy} ${name} ${type}${from === undefined ? '' : ` ${from}_TO_${to}`}`;
      }),
    clear: () => void events.splice(0),
    stop: () => {
      for (const unsubscribe of subscriptions.splice(0)) unsubscribe();
    },
  };
}
