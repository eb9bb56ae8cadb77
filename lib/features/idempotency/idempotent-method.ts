import { from, lastValueFrom, Observable, Subscriber } from 'rxjs';
import {
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyStoreUnavailableError,
} from '../../kernel/errors';
import { callerCancellation } from '../../kernel/cancellation';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { Policy } from '../../kernel/policy';
import { fingerprintOf, scopedKey } from './idempotency-key';
import { idempotencyStorage } from './idempotency.context';
import { CYCLIC_FINGERPRINT, KEY_FUNCTION_EMPTY } from './idempotency.messages';
import { claimKey, IdempotentRun } from './idempotent-run';
import {
  IdempotencyOutcome,
  IdempotencyTransport,
  IdempotentMethodSettings,
  IdempotentTarget,
} from './idempotent-target';

/**
 * The idempotency layer of one `@Idempotent` method in its pipeline. Over
 * HTTP the interceptor drives the run (claim, run, settle) and this layer
 * only marks when the method itself is entered (see
 * `IdempotencyScope.started`); for a method called with a `key`
 * option it does the whole run: the same states and stores, the stored
 * result returned to a duplicate call.
 */
export class IdempotentMethod implements Policy, IdempotentTarget {
  /**
   * @param name - `Class.method`, used in errors, events and messages
   * @param settings - the resolved options
   * @param emit - reports each outcome
   * @param warn - logs a message once
   */
  constructor(
    readonly name: string,
    readonly settings: IdempotentMethodSettings,
    private readonly emit: (
      outcome: IdempotencyOutcome,
      method: IdempotentMethod,
      transport: IdempotencyTransport,
      key?: string,
      error?: unknown,
    ) => void,
    readonly warn: (message: string) => void,
  ) {}

  /** Reports one outcome of a request or call through this method. */
  report(outcome: IdempotencyOutcome, transport: IdempotencyTransport, key?: string, error?: unknown): void {
    this.emit(outcome, this, transport, key, error);
  }

  /** Runs the method under its key (see the class comment). */
  async call<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const scope = idempotencyStorage.getStore();
    if (scope !== undefined && scope.owner === this && !scope.started) {
      scope.started = true;
      return next(arg);
    }
    // A route reached without an idempotent request (GET, an optional key left out, a direct call) runs as it is.
    if (this.settings.route) return next(arg);
    return this.callWithKey(next, arg);
  }

  /**
   * Each subscription of an Observable method, as {@link IdempotentMethod.call}
   * runs a call: over HTTP it marks the start of the method's run; with a
   * `key` it runs the subscription under the key and answers its last value
   * (the one stored and replayed).
   */
  observe<T>(source: Observable<T>, args: unknown[]): Observable<T> {
    return new Observable<T>((subscriber) => {
      const scope = idempotencyStorage.getStore();
      if (scope !== undefined && scope.owner === this && !scope.started) {
        scope.started = true;
        return source.subscribe(subscriber);
      }
      if (this.settings.route) return source.subscribe(subscriber);
      return from(this.callWithKey(() => lastValueFrom(source, { defaultValue: undefined }), args)).subscribe(
        subscriber as Subscriber<unknown>,
      );
    });
  }

  private async callWithKey<A, R>(next: (arg: A) => R | PromiseLike<R>, arg: A): Promise<R> {
    const args = arg as unknown as unknown[];
    const { key: keyOf, fingerprint } = this.settings;
    const key = keyOf === undefined ? undefined : keyOf(...args);
    if (typeof key !== 'string' || key === '') {
      if ((key === undefined || key === '') && !this.settings.required) {
        this.report('bypassed', 'call');
        return next(arg);
      }
      this.report('missing_key', 'call');
      throw new IdempotencyKeyMissingError(this.name, KEY_FUNCTION_EMPTY(this.name, key));
    }
    // A caller that has already cancelled claims no key and runs nothing.
    const cancelled = callerCancellation(contextStorage.getStore());
    if (cancelled !== undefined) throw cancelled;
    const storeKey = scopedKey(undefined, 'CALL', this.name, key);
    const print = fingerprintOf(fingerprint === undefined ? args[0] : fingerprint(...args), () =>
      CYCLIC_FINGERPRINT(this.name),
    );
    const start = await this.reportingStoreFaults(key, () =>
      claimKey(this, storeKey, print, key, { transport: 'call', args }),
    );
    if (start.kind === 'replay') {
      this.report(start.outcome, 'call', key);
      return (start.response.kind === 'result' ? start.response.value : undefined) as R;
    }
    if (start.kind === 'refuse') {
      this.report(start.outcome, 'call', key, start.error);
      throw start.error;
    }
    const run = await this.reportingStoreFaults(key, () =>
      IdempotentRun.open(this, storeKey, start.token, start.record, true),
    );
    // A caller that cancels starts nothing new, but what runs finishes: its answer is stored for the retry with the same key.
    const caller = contextStorage.getStore();
    const shielded = caller === undefined ? undefined : ResilienceContext.shielding(caller);
    let value: R;
    try {
      value = await run.enter(() => (shielded === undefined ? next(arg) : contextStorage.run(shielded, next, arg)));
    } catch (error) {
      shielded?.dispose();
      run.fail(error);
      const settled = await run.finish(run.settlementForError(error));
      // A failed run never stores, so it cannot be rolled back after all: it was released or kept.
      this.report(settled.status === 'released' ? 'released' : 'kept_unknown', 'call', key, error);
      throw error;
    }
    shielded?.dispose();
    const settled = await run.finish('store', { kind: 'result', value });
    switch (settled.status) {
      case 'completed':
        this.report('executed', 'call', key);
        return value;
      case 'rolled_back':
        this.report(
          settled.error instanceof IdempotencyKeyInProgressError ? 'in_progress' : 'released',
          'call',
          key,
          settled.error,
        );
        throw settled.error;
      default:
        this.report('kept_unknown', 'call', key, settled.status === 'kept' ? settled.error : undefined);
        return value;
    }
  }

  /** Runs a step before the method; a store that failed it is reported as `store_unavailable`. */
  private async reportingStoreFaults<T>(key: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof IdempotencyStoreUnavailableError) this.report('store_unavailable', 'call', key, error);
      throw error;
    }
  }
}
