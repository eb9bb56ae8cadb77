import { isCancellation } from '../../kernel/cancellation';
import { EventTap, InstanceSnapshot, SpanEventSink, tapStream } from '../../kernel/telemetry';
import { RESILIENCE_SPAN_ATTRIBUTES as A, RESILIENCE_SPAN_EVENTS as E } from '../../kernel/span-attributes';
import { ErrorClass } from '../../config/error-matcher';
import { EventStream, EventSubscriber, Unsubscribe } from '../../kernel/events';
import { catchError, from, isObservable, Observable, of } from 'rxjs';
import { DUPLICATE_FALLBACK } from './fallback.messages';
import type { FallbackEvent } from './fallback.events';

/**
 * One `@Fallback` entry: the error classes it handles and the handler that
 * answers instead. The handler gets the method's original arguments and
 * the error; it may return a value (or a promise) or throw.
 */
export interface FallbackHandlerSpec {
  /** The error classes this handler answers for (subclasses included, unless one has a handler of its own). */
  readonly errors: readonly ErrorClass[];
  /** Answers instead of the method, given its original arguments and the error. */
  readonly handler: (args: unknown[], error: unknown) => unknown;
}

interface Choice {
  readonly errorClass: ErrorClass;
  readonly handler: FallbackHandlerSpec['handler'];
}

/**
 * Typed fallbacks: when the call fails, the handler declared for the most
 * specific ancestor class of the error answers instead; an error no handler
 * declares is rethrown unchanged, as is any thrown non-object.
 */
export class FallbackPolicy {
  private readonly events = new EventStream<FallbackEvent>();

  /** Fires each time a handler is chosen, before it runs. */
  readonly onFallback: EventSubscriber<FallbackEvent> = this.events.subscribe;

  private readonly calls = new EventStream<void>();

  /**
   * Fires on each call of the method this policy guards, answered by the
   * method or by a handler: the share of fallback answers needs the calls,
   * which the policy itself never sees when the method succeeds. The
   * method's pipeline reports them through `countCall`.
   */
  readonly onCall: EventSubscriber<void> = this.calls.subscribe;

  private readonly staleAnswers = new EventStream<void>();

  /**
   * Fires each time a cache inside this policy answered a failed call with
   * its last known good: a degraded answer of the method, counted in its
   * fallback share as a handler's answer is.
   */
  readonly onStaleAnswer: EventSubscriber<void> = this.staleAnswers.subscribe;

  /** @internal Calls reported through {@link FallbackPolicy.countCall} since the policy was made: what metrics read. */
  reportedCalls = 0;

  private readonly declared = new Map<unknown, Choice>();
  // Keyed by prototype: one entry per thrown class, and it lets classes made at run time be collected.
  private readonly resolved = new WeakMap<object, Choice | null>();

  /**
   * @param name - the name used in events and metrics
   * @param specs - the `@Fallback` entries of one method, in any order
   * @throws Error when two entries name the same error class
   */
  constructor(
    /** The fallback policy's name, used in events and metrics (usually the method it guards). */
    readonly name: string,
    specs: readonly FallbackHandlerSpec[],
  ) {
    for (const { errors, handler } of specs) {
      for (const errorClass of errors) {
        if (this.declared.has(errorClass)) throw new Error(DUPLICATE_FALLBACK(name, errorClass.name));
        this.declared.set(errorClass, { errorClass, handler });
      }
    }
  }

  /** @internal Its events on the telemetry channel, under Resilience4j's event type names. */
  tapEvents(tap: EventTap): Unsubscribe[] {
    const into: Unsubscribe[] = [];
    tapStream(into, tap, 'FALLBACK', this.onFallback);
    return into;
  }

  /** @internal Nothing but its name: a fallback has no settings or counters of its own to show. */
  snapshot(): InstanceSnapshot {
    return {};
  }

  /** @internal Its span events: each answer of a handler, with the error class it handles. */
  traceEvents(trace: SpanEventSink): Unsubscribe[] {
    return [
      this.onFallback(({ name, errorClass, error }) =>
        trace.failure(
          E.fallback,
          { [A.policy]: 'fallback', [A.instance]: name, [A.fallbackHandler]: errorClass.name },
          error,
        ),
      ),
    ];
  }

  /** @internal Counts the calls of the guarded method and the answers of its handlers and of a cache inside it (stale). */
  countAnswers(onCall: () => void, onDegraded: () => void): Unsubscribe {
    const stopCalls = this.onCall(onCall);
    const stopFallbacks = this.onFallback(onDegraded);
    const stopStale = this.onStaleAnswer(onDegraded);
    return () => {
      stopFallbacks();
      stopStale();
      stopCalls();
    };
  }

  /**
   * @internal Reports one call of the guarded method to
   * {@link FallbackPolicy.onCall}; the method's pipeline calls it on entry.
   */
  countCall(): void {
    this.reportedCalls++;
    if (this.calls.active) this.calls.emit();
  }

  /** @internal Reports a stale answer of a cache inside this policy to {@link FallbackPolicy.onStaleAnswer}. */
  countStaleAnswer(): void {
    if (this.staleAnswers.active) this.staleAnswers.emit();
  }

  /**
   * @internal Runs each subscription of `source`; on an error with a matching
   * handler, continues with what the handler returns: the values of an
   * Observable, what a Promise resolves to, or a plain value.
   */
  observe<T>(source: Observable<T>, args: unknown[]): Observable<T> {
    return source.pipe(catchError((error: unknown) => answerOf(this.recover(args, error)) as Observable<T>));
  }

  /**
   * @internal Answers for a call that failed with `error`: what the chosen handler
   * returns (a value or a promise), or `error` rethrown when no handler
   * declares its class.
   */
  recover(args: unknown[], error: unknown): unknown {
    // A cancelled call has no caller left to answer: its cancellation goes on up.
    if (isCancellation(error)) throw error;
    const choice = this.choose(error);
    if (choice === undefined) throw error;
    // Stryker disable next-line ConditionalExpression: emitting to no listener does nothing; the check only skips building the event
    if (this.events.active) this.events.emit({ name: this.name, errorClass: choice.errorClass, error });
    return choice.handler(args, error);
  }

  private choose(error: unknown): Choice | undefined {
    if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return undefined;
    const proto = Object.getPrototypeOf(error) as object | null;
    if (proto === null) return undefined;
    let choice = this.resolved.get(proto);
    // Stryker disable next-line ConditionalExpression: the cache only saves the walk; a new walk finds the same handler
    if (choice === undefined) {
      choice = this.closest(proto);
      this.resolved.set(proto, choice);
    }
    return choice ?? undefined;
  }

  /** Walks from the thrown class towards `Object`; the first class with a handler is the most specific. */
  private closest(proto: object): Choice | null {
    for (
      let p: object | null = proto;
      p !== null && p !== Object.prototype;
      p = Object.getPrototypeOf(p) as object | null
    ) {
      if (!Object.prototype.hasOwnProperty.call(p, 'constructor')) continue;
      const choice = this.declared.get((p as { constructor: unknown }).constructor);
      if (choice !== undefined) return choice;
    }
    return null;
  }
}

/** A handler's answer as an Observable: its own values, a promise's value, or the value itself. */
function answerOf(answer: unknown): Observable<unknown> {
  if (isObservable(answer)) return answer;
  // Stryker disable next-line ConditionalExpression: null?.then is undefined, so null reaches of() without this check
  if (answer !== null && typeof (answer as PromiseLike<unknown> | undefined)?.then === 'function')
    return from(answer as PromiseLike<unknown>);
  return of(answer);
}

/**
 * @internal Counts a fallback policy's guarded calls by its
 * {@link FallbackPolicy.onCall} event. Given as a metrics binding's
 * `countCalls`, it tells the binding to read the policy's own count at
 * scrape time instead, so no listener runs on every call.
 */
export function countReportedCalls(policy: FallbackPolicy, onCall: () => void): Unsubscribe {
  return policy.onCall(onCall);
}
