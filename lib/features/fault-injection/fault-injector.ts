import { isObservable, Observable, Subscription } from 'rxjs';
import { Clock, TimerHandle } from '../../kernel/clock';
import { parseDuration } from '../../config/duration';
import { callerCancellation } from '../../kernel/cancellation';
import { checkInstanceName } from '../../kernel/instance-name';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { EventStream, EventSubscriber } from '../../kernel/events';
import {
  FAULT_BAD_FOR,
  FAULTS_DISABLED,
  FAULTS_ENABLED,
  FAULTS_IN_PRODUCTION,
  INJECTED_ERROR_MESSAGE,
} from './fault-injection.messages';
import { FaultSpec, InjectedError, readFault, ResolvedFault, ResolvedFaultInjection } from './fault-injection.options';
import { markInjected } from './injected-fault';

/** The kinds of fault, as the metric label `kind` and the event name them. */
export type FaultKind = 'latency' | 'error' | 'outcome';

/** One fault was injected into a call. */
export interface FaultInjectedEvent {
  /** Always `'FAULT_INJECTED'`. */
  readonly type: 'FAULT_INJECTED';
  /** The instance name whose fault it was. */
  readonly name: string;
  /** What was injected: a delay, an error, or a substitute outcome. */
  readonly kind: FaultKind;
  /** The added delay, for a latency fault (ms). */
  readonly durationMs?: number;
}

/** A fault in force, as {@link FaultInjector.active} lists it. */
export interface ActiveFault extends ResolvedFault {
  /** The instance name the faults apply to. */
  readonly name: string;
  /** Time left before a fault injected with `for` ends (ms); absent when it lasts until cleared. */
  readonly remainingMs?: number;
}

interface Entry {
  readonly fault: ResolvedFault;
  /** Clock reading at which the fault ends; infinite when it lasts until cleared. */
  readonly until: number;
}

/** What one call draws: the delay to add, and what answers instead of the call. */
interface Draw {
  readonly name: string;
  readonly delay: number;
  readonly replace: 'error' | 'outcome' | undefined;
  readonly fault: ResolvedFault;
}

const ERROR_CODE = /^E[A-Z0-9_]+$/;

/** The `NODE_ENV` spellings that mean production, compared trimmed and in lower case. */
const PRODUCTION_ENVIRONMENTS = new Set(['production', 'prod']);

/** True when `environment` (a `NODE_ENV` value) names production: `production` or `prod`, in any case, spaces around ignored. */
function isProductionEnvironment(environment: string | undefined): environment is string {
  return environment !== undefined && PRODUCTION_ENVIRONMENTS.has(environment.trim().toLowerCase());
}

/**
 * What a call whose scope has been cancelled rejects with: the caller's
 * `AbortError` when the caller cancelled, else the reason its attempt was
 * aborted with (its time limit).
 */
function cancelledError(scope: ResilienceContext): unknown {
  return callerCancellation(scope) ?? scope.reason;
}

/**
 * Chaos for game days and tests (Polly's Simmy strategies): per instance
 * name, latency, errors and substitute outcomes, each at a rate, injected
 * innermost — in place of, or before, the real call — so every outer policy
 * reacts as to a real fault. Off unless the module option
 * `faultInjection.enabled` is true; refused at startup in production unless
 * `allowInProduction`. A call whose caller has cancelled gets no fault (and
 * no call): it rejects with the caller's `AbortError`, and an injected
 * latency ends at once when the caller cancels during it. Injectable in Nest (`FaultInjector`) and served by the
 * guarded admin endpoints (`POST /actuator/faults/{name}`).
 */
export class FaultInjector {
  /** Fault injection is on: configured faults apply and {@link FaultInjector.inject} is allowed. */
  readonly enabled: boolean;
  private readonly faults = new Map<string, Entry>();
  private readonly events = new EventStream<FaultInjectedEvent>();
  private readonly counts = new Map<string, Record<FaultKind, number>>();
  private readonly errorClasses = new Map<string, new (message: string) => Error>();

  /** Every injection, as it happens. */
  readonly onFaultInjected: EventSubscriber<FaultInjectedEvent> = this.events.subscribe;

  /**
   * @internal Made by the registry from the module option `faultInjection`.
   *
   * @throws Error when enabled while `environment` names production (`production` or `prod`, any case, trimmed) and not allowed there
   */
  constructor(
    options: ResolvedFaultInjection,
    private readonly clock: Clock,
    private readonly random: () => number,
    environment: string | undefined,
    warn: (message: string) => void,
  ) {
    this.enabled = options.enabled;
    if (!this.enabled) return;
    const names = [...options.instances.keys()];
    if (isProductionEnvironment(environment) && !options.allowInProduction)
      throw new Error(FAULTS_IN_PRODUCTION(names, environment));
    for (const [name, fault] of options.instances) this.faults.set(name, { fault, until: Number.POSITIVE_INFINITY });
    warn(FAULTS_ENABLED(names));
  }

  /**
   * Injects `fault` into every call under the instance name `name` (replacing
   * its earlier fault), for `options.for` (a duration) or until cleared.
   *
   * @throws Error when fault injection is off, or the fault is invalid (naming the key)
   */
  inject(name: string, fault: FaultSpec, options: { readonly for?: number | string } = {}): void {
    checkInstanceName(name, 'FaultInjector.inject');
    if (!this.enabled) throw new Error(FAULTS_DISABLED(name));
    const resolved = readFault(fault, `fault for '${name}'`);
    const lasting = options.for === undefined ? undefined : parseDuration(options.for);
    if (options.for !== undefined && (lasting === undefined || lasting <= 0))
      throw new Error(FAULT_BAD_FOR(name, options.for));
    this.faults.set(name, {
      fault: resolved,
      until: lasting === undefined ? Number.POSITIVE_INFINITY : this.clock.now() + lasting,
    });
  }

  /** Ends the faults of `name`, or every fault when no name is given. */
  clear(name?: string): void {
    if (name === undefined) this.faults.clear();
    else this.faults.delete(name);
  }

  /** The faults in force, by name. */
  active(): ActiveFault[] {
    const now = this.clock.now();
    const out: ActiveFault[] = [];
    for (const [name, entry] of this.faults) {
      if (entry.until <= now) continue;
      out.push({
        name,
        ...entry.fault,
        ...(entry.until === Number.POSITIVE_INFINITY ? {} : { remainingMs: entry.until - now }),
      });
    }
    return out;
  }

  /** Injections so far, by instance name and kind (for the metric `resilience4nest_injected_faults_total`). */
  injected(): ReadonlyMap<string, Readonly<Record<FaultKind, number>>> {
    return this.counts;
  }

  /**
   * @internal `call` with the faults of `names` applied to each call: a
   * delay before it, or an error or outcome instead of it. `call` answers a
   * Promise (or a value); an Observable it answers gets its faults per
   * subscription. A call made in a scope that has been cancelled draws no
   * fault and calls nothing: it rejects with the caller's `AbortError`.
   */
  wrapCall(names: readonly string[], call: (args: unknown[]) => unknown): (args: unknown[]) => unknown {
    return (args) => {
      const scope = contextStorage.getStore();
      if (scope?.aborted === true) return Promise.reject(cancelledError(scope));
      const draw = this.draw(names);
      if (draw === undefined) return call(args);
      if (draw.delay === 0) return this.answer(draw, call, args);
      return this.delay(draw.delay, scope).then(() => this.answer(draw, call, args));
    };
  }

  /**
   * @internal `call`, whose answer is an Observable (or, for a method of
   * unknown kind, whatever it answers), with the faults of `names` applied
   * to each subscription of that Observable.
   */
  wrapObservableCall(names: readonly string[], call: (args: unknown[]) => unknown): (args: unknown[]) => unknown {
    return (args) => {
      const answer = call(args);
      return isObservable(answer) ? this.observe(names, answer) : answer;
    };
  }

  /**
   * @internal `source` with the faults of `names` applied to each
   * subscription; a subscription whose scope has been cancelled draws no
   * fault and subscribes nothing, and an injected latency ends when it is.
   */
  observe<T>(names: readonly string[], source: Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      const scope = contextStorage.getStore();
      if (scope?.aborted === true) {
        subscriber.error(cancelledError(scope));
        return undefined;
      }
      const draw = this.draw(names);
      if (draw === undefined) return source.subscribe(subscriber);
      let inner: Subscription | undefined;
      let timer: TimerHandle = undefined;
      const onAbort = (): void => {
        this.clock.clearTimeout(timer);
        timer = undefined;
        subscriber.error(cancelledError(scope!));
      };
      const go = (): void => {
        timer = undefined;
        scope?.unwatch(onAbort);
        if (draw.replace === 'error') subscriber.error(this.error(draw.name, draw.fault.error!.error));
        else if (draw.replace === 'outcome') {
          subscriber.next(draw.fault.outcome!.value as T);
          subscriber.complete();
        } else inner = source.subscribe(subscriber);
      };
      if (draw.delay === 0) go();
      else {
        timer = this.clock.setTimeout(go, draw.delay);
        scope?.watch(onAbort);
      }
      return () => {
        this.clock.clearTimeout(timer);
        scope?.unwatch(onAbort);
        inner?.unsubscribe();
      };
    });
  }

  private answer(draw: Draw, call: (args: unknown[]) => unknown, args: unknown[]): unknown {
    if (draw.replace === 'error') return Promise.reject(this.error(draw.name, draw.fault.error!.error));
    if (draw.replace === 'outcome') return Promise.resolve(draw.fault.outcome!.value);
    return call(args);
  }

  /** Draws the faults of the first of `names` that has any; `undefined` when none applies to this call. */
  private draw(names: readonly string[]): Draw | undefined {
    for (const name of names) {
      const entry = this.faults.get(name);
      if (entry === undefined) continue;
      if (entry.until <= this.clock.now()) {
        this.faults.delete(name);
        continue;
      }
      const { latency, error, outcome } = entry.fault;
      const delay = latency !== undefined && this.random() < latency.rate ? latency.duration : 0;
      const replace =
        error !== undefined && this.random() < error.rate
          ? 'error'
          : outcome !== undefined && this.random() < outcome.rate
            ? 'outcome'
            : undefined;
      if (delay === 0 && replace === undefined) return undefined;
      if (delay > 0) this.count(name, 'latency', delay);
      if (replace !== undefined) this.count(name, replace, undefined);
      return { name, delay, replace, fault: entry.fault };
    }
    return undefined;
  }

  private count(name: string, kind: FaultKind, durationMs: number | undefined): void {
    let counts = this.counts.get(name);
    if (counts === undefined) this.counts.set(name, (counts = { latency: 0, error: 0, outcome: 0 }));
    counts[kind]++;
    if (this.events.active)
      this.events.emit(
        durationMs === undefined
          ? { type: 'FAULT_INJECTED', name, kind }
          : { type: 'FAULT_INJECTED', name, kind, durationMs },
      );
  }

  /**
   * Waits `ms` on the clock; when `scope` is cancelled first, rejects at
   * once with the caller's `AbortError` (or the aborted attempt's reason).
   */
  private delay(ms: number, scope: ResilienceContext | undefined): Promise<void> {
    if (scope === undefined) return new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.clock.clearTimeout(timer);
        reject(cancelledError(scope));
      };
      const timer = this.clock.setTimeout(() => {
        scope.unwatch(onAbort);
        resolve();
      }, ms);
      scope.watch(onAbort);
    });
  }

  /** The error an `error` fault of `name` throws, marked as injected. */
  private error(name: string, spec: InjectedError): Error {
    return markInjected(this.makeError(name, spec));
  }

  private makeError(name: string, spec: InjectedError): Error {
    if (typeof spec === 'function')
      return new (spec as new (message: string) => Error)(INJECTED_ERROR_MESSAGE(name, spec.name));
    if (typeof spec === 'number')
      return Object.assign(new Error(INJECTED_ERROR_MESSAGE(name, `HTTP ${spec}`)), { status: spec, statusCode: spec });
    if (ERROR_CODE.test(spec))
      return Object.assign(new Error(INJECTED_ERROR_MESSAGE(name, spec)), { code: spec, syscall: 'connect' });
    return new (this.errorClass(spec))(INJECTED_ERROR_MESSAGE(name, spec));
  }

  /** An error class whose name is `name` (a dotted Java name's last segment), made once. */
  private errorClass(name: string): new (message: string) => Error {
    let made = this.errorClasses.get(name);
    if (made === undefined) {
      const simple = name.slice(name.lastIndexOf('.') + 1);
      made = { [simple]: class extends Error {} }[simple];
      Object.defineProperty(made.prototype, 'name', { value: simple, configurable: true, writable: true });
      this.errorClasses.set(name, made);
    }
    return made;
  }
}
