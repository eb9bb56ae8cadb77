import { AsyncLocalStorage } from 'node:async_hooks';
import { Clock, TimerHandle } from './clock';
import { DeadlineExceededError } from './errors';

/** Default name of the header that carries the remaining deadline in ms. */
export const DEFAULT_DEADLINE_HEADER = 'x-request-deadline-ms';

/** Default `deadline.maxBudget`: the most time a deadline header can ask for (24 h). */
export const DEFAULT_MAX_DEADLINE_BUDGET_MS = 24 * 60 * 60 * 1000;

/**
 * @internal The deadline and cancellation scope of a request or of one attempt
 * inside it. The `AbortSignal` is created only when someone asks for it,
 * so a call that never looks at its signal pays nothing for it.
 */
export class ResilienceContext {
  private controller?: AbortController;
  private abortReason?: unknown;
  private timer?: TimerHandle;
  /** Called once when the scope aborts: its signal's controller, child scopes, calls racing their caller. */
  private watchers?: Set<() => void>;
  /** True while the scope follows its parent and its deadline (from the first watcher or signal on). */
  private following = false;
  private disposed = false;
  private followed?: AbortSignal;
  private onFollowedAbort?: () => void;

  /**
   * @param clock - the clock the deadline is measured on
   * @param deadline - absolute time (on `clock`) the work must finish by; `Infinity` for none
   * @param header - name of the header that carries the remaining time downstream
   * @param parent - the enclosing scope, whose cancellation this one follows
   * @param abortsAtDeadline - whether the signal aborts by itself when the deadline passes
   *   (a request scope); an attempt scope is aborted by its time limiter instead
   */
  constructor(
    /** The clock the deadline is measured on. */
    readonly clock: Clock,
    /** Absolute time (on `clock`) the work must finish by; an Observable attempt moves it with each value. */
    public deadline: number,
    /** Name of the header that carries the remaining time (ms) to downstream calls. */
    readonly header: string = DEFAULT_DEADLINE_HEADER,
    /** The enclosing scope (the request's, for an attempt), whose cancellation this one follows. */
    readonly parent?: ResilienceContext,
    private readonly abortsAtDeadline = parent === undefined,
  ) {}

  /**
   * @internal True for the scope of one attempt (a time-limited attempt, a
   * hedge copy), whose own abort (its time limit, a hedge that lost) is no
   * caller's cancellation; false for a caller's scope.
   */
  attempt = false;

  /**
   * @internal The scope of one attempt under `parent` (the caller's), ending
   * by `deadline`: aborted by the policy that made it (its time limit, a
   * hedge that lost) and whenever the caller cancels.
   */
  static forAttempt(clock: Clock, deadline: number, parent: ResilienceContext | undefined): ResilienceContext {
    const scope = new ResilienceContext(clock, deadline, parent?.header ?? DEFAULT_DEADLINE_HEADER, parent, false);
    scope.attempt = true;
    return scope;
  }

  /** @internal The nearest scope around this one (itself included) that is a caller's, not an attempt's. */
  get caller(): ResilienceContext | undefined {
    if (this.shields) return undefined;
    return this.attempt ? this.parent?.caller : this;
  }

  /**
   * @internal True for a scope whose calls run to their end whatever their
   * caller does: a shielded one (see {@link ResilienceContext.shielding}), or
   * work detached from its caller (an idempotent request's).
   */
  shields = false;

  /**
   * @internal A scope under `parent` whose calls are not cut short when the
   * caller cancels: the caller's cancellation still aborts its signal and
   * stops retries and waits from starting anything new, but a call that is
   * running ends with its own answer, so that answer can be stored (an
   * idempotent call, replayed to the caller's retry with the same key).
   */
  static shielding(parent: ResilienceContext): ResilienceContext {
    const scope = ResilienceContext.forAttempt(parent.clock, parent.deadline, parent);
    scope.shields = true;
    return scope;
  }

  /** Milliseconds left before the deadline (never negative), `Infinity` without one. */
  remaining(): number {
    if (this.deadline === Number.POSITIVE_INFINITY) return this.deadline;
    const left = this.deadline - this.clock.now();
    return left > 0 ? left : 0;
  }

  /** True once the scope was aborted (timeout, deadline or parent). */
  get aborted(): boolean {
    return this.abortReason !== undefined || (this.parent?.aborted ?? false);
  }

  /** Why the scope was aborted (its own abort, else its parent's); `undefined` while it is not. */
  get reason(): unknown {
    return this.abortReason ?? this.parent?.reason;
  }

  /**
   * Aborts the scope when `signal` aborts, as it does when its parent does
   * (a caller's signal given to `execute`); {@link ResilienceContext.dispose} stops following it.
   */
  follow(signal: AbortSignal): void {
    if (signal.aborted) {
      this.abort(signal.reason);
      return;
    }
    this.followed = signal;
    this.onFollowedAbort = () => this.abort(signal.reason);
    signal.addEventListener('abort', this.onFollowedAbort, { once: true });
  }

  /** The scope's signal, aborted when it times out, its deadline passes or its parent aborts. */
  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = new AbortController();
    this.controller = controller;
    const reason = this.reason;
    if (reason !== undefined) controller.abort(reason);
    else this.startFollowing();
    return controller.signal;
  }

  /**
   * @internal Calls `listener` once, when the scope aborts (by itself, at
   * its deadline, with its parent or a followed signal); much cheaper than
   * a listener on its signal. A scope already aborted never calls it.
   */
  watch(listener: () => void): void {
    (this.watchers ??= new Set()).add(listener);
    this.startFollowing();
  }

  /** @internal Stops calling `listener` (given to {@link ResilienceContext.watch}). */
  unwatch(listener: () => void): void {
    this.watchers?.delete(listener);
  }

  /** @internal How many listeners wait for the scope to abort (its signal's and its child scopes' included). */
  get watching(): number {
    return this.watchers?.size ?? 0;
  }

  /** Aborts the scope with `reason`; later calls are ignored. */
  abort(reason: unknown): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.stopFollowing();
    this.controller?.abort(reason);
    const watchers = this.watchers;
    if (watchers === undefined) return;
    this.watchers = undefined;
    for (const listener of watchers) listener();
  }

  /**
   * Releases what the scope holds: the deadline timer of a request scope,
   * and what an attempt scope left on its parent (so attempts that settled
   * never pile up on a long request's scope).
   */
  dispose(): void {
    this.disposed = true;
    this.stopFollowing();
  }

  /** Starts following the parent and, for a request scope, the deadline: once, when the first one waits for an abort. */
  private startFollowing(): void {
    if (this.following || this.disposed || this.abortReason !== undefined) return;
    this.following = true;
    this.parent?.watch(this.parentAborted);
    if (this.abortsAtDeadline && this.deadline !== Number.POSITIVE_INFINITY) {
      this.timer = this.clock.setTimeout(this.deadlinePassed, this.remaining());
    }
  }

  private readonly parentAborted = (): void => this.abort(this.parent!.reason);

  private readonly deadlinePassed = (): void => {
    this.timer = undefined;
    this.abort(new DeadlineExceededError('deadline', 'the request deadline has passed'));
  };

  private stopFollowing(): void {
    if (this.onFollowedAbort !== undefined) {
      this.followed?.removeEventListener('abort', this.onFollowedAbort);
      this.followed = undefined;
      this.onFollowedAbort = undefined;
    }
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.following) return;
    this.following = false;
    this.parent?.unwatch(this.parentAborted);
  }
}

/** The async-local slot holding the current {@link ResilienceContext}. */
export const contextStorage = new AsyncLocalStorage<ResilienceContext>();

/** @internal The current request or attempt scope, if any. */
export function currentContext(): ResilienceContext | undefined {
  return contextStorage.getStore();
}

/** @internal An attempt that runs without a context of its own, and can make one when a policy inside it needs it. */
export interface ScopeOnDemand {
  scopeOnDemand(): ResilienceContext;
}

let synchronousAttempt: ScopeOnDemand | undefined;

/**
 * @internal Calls `fn(arg)` as the synchronous part of `attempt`, an attempt
 * without a context of its own: a policy that runs inside it before its
 * first `await` (a bulkhead queueing the call, a nested time limiter) finds
 * the attempt through {@link policyScope}.
 */
export function runAsAttempt<A, R>(attempt: ScopeOnDemand, fn: (arg: A) => R, arg: A): R {
  const outer = synchronousAttempt;
  synchronousAttempt = attempt;
  try {
    return fn(arg);
  } finally {
    synchronousAttempt = outer;
  }
}

/**
 * @internal The scope a policy acts in: the async-local one, else the one of
 * the attempt whose synchronous part is running (made on demand), so that a
 * bulkhead wait or a nested time limit still ends with its attempt when the
 * attempt entered no context.
 */
export function policyScope(): ResilienceContext | undefined {
  return policyScopeOver(contextStorage.getStore());
}

/** @internal {@link policyScope}, for a caller that has read the async-local scope (`store`) already. */
export function policyScopeOver(store: ResilienceContext | undefined): ResilienceContext | undefined {
  return store ?? synchronousAttempt?.scopeOnDemand();
}

/**
 * The `AbortSignal` of the current attempt (or request): aborted when the
 * attempt's time limit passes, a hedge copy loses, the request deadline
 * fires or the caller cancels. Inside a decorated method it is the
 * attempt's in every context, at least when read before the method's first
 * `await` (read it first and pass it on); `undefined` outside any scope.
 * Pass it to `fetch`, database drivers and the like.
 */
export function currentSignal(): AbortSignal | undefined {
  return policyScope()?.signal;
}

/** Milliseconds left for the current attempt or request; `Infinity` when no deadline applies. */
export function remainingTime(): number {
  const ctx = policyScope();
  return ctx === undefined ? Number.POSITIVE_INFINITY : ctx.remaining();
}

/**
 * Headers that pass the remaining time to a downstream service
 * (`{ 'x-request-deadline-ms': '1840' }`); empty when no deadline applies.
 */
export function deadlineHeaders(): Record<string, string> {
  const ctx = policyScope();
  if (ctx === undefined || ctx.deadline === Number.POSITIVE_INFINITY) return {};
  // Whole milliseconds in plain digits, never `1e+24`, whatever budget the scope was given.
  return { [ctx.header]: String(Math.floor(Math.min(ctx.remaining(), Number.MAX_SAFE_INTEGER))) };
}
