import { contextStorage, DEFAULT_DEADLINE_HEADER } from '../../kernel/context';

/** Sets one header on a carrier; OpenTelemetry's `TextMapSetter`. */
export interface HeaderSetter<Carrier> {
  /** Sets header `key` to `value` on `carrier`. */
  set(carrier: Carrier, key: string, value: string): void;
}

/**
 * An OpenTelemetry `TextMapPropagator` that puts the time left of the
 * current attempt (or request) in the deadline header of every outgoing
 * request the OpenTelemetry instrumentations propagate into, beside
 * `traceparent`: the deadline travels with the trace context, with no
 * `deadlineHeaders()` at each call site. Inbound, the module reads that
 * header as any deadline header. Register it with the other propagators:
 *
 * @example
 * ```ts
 * propagation.setGlobalPropagator(
 *   new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new DeadlinePropagator()] }),
 * );
 * ```
 */
export class DeadlinePropagator {
  /** @param header - the deadline header, as the module option `deadline.header` names it */
  constructor(private readonly header: string = DEFAULT_DEADLINE_HEADER) {}

  /** Writes the time left, in whole ms, when the current scope has a deadline; nothing otherwise. */
  inject<Carrier>(_context: unknown, carrier: Carrier, setter: HeaderSetter<Carrier>): void {
    const scope = contextStorage.getStore();
    if (scope === undefined || scope.deadline === Number.POSITIVE_INFINITY) return;
    setter.set(carrier, this.header, String(Math.floor(Math.min(scope.remaining(), Number.MAX_SAFE_INTEGER))));
  }

  /** Returns `context` unchanged: the module reads an inbound deadline from the header itself. */
  extract<C>(context: C): C {
    return context;
  }

  /** The header it writes. */
  fields(): string[] {
    return [this.header];
  }
}
