import { BulkheadPolicy } from '../../lib/policies/bulkhead/bulkhead.policy';
import { NO_PERMIT } from '../../lib/engine/layers';
import { BULKHEAD_SCHEMA, BulkheadConfig } from '../../lib/policies/bulkhead/bulkhead.config';
import { VirtualClock } from '../../lib/kernel/clock';
import { BulkheadFullError } from '../../lib/kernel/errors';

/*
 * Port of Resilience4j's SemaphoreBulkheadTest
 * (resilience4j-bulkhead/src/test/java/io/github/resilience4j/bulkhead/internal/). Each case names
 * the Java test it mirrors. Java's tryAcquirePermission() / onComplete() are tryEnter() / exit()
 * for a permit taken without waiting, and execute() for a call that may wait; its event types
 * CALL_PERMITTED, CALL_REJECTED and CALL_FINISHED are onCallPermitted, onCallRejected and
 * onCallFinished. Waits run on a VirtualClock.
 *
 * Cases not ported:
 * | Java test method                                           | why                                                        |
 * |------------------------------------------------------------|------------------------------------------------------------|
 * | testToString                                               | no toString contract here                                  |
 * | testCreateWithNullConfig                                   | configs are validated at startup; no null config reaches it |
 * | testTryEnterWithInterruptDuringTimeout                     | thread interruption has no equivalent (an abort signal is: bulkhead.spec.ts) |
 * | testAcquireWithInterruptDuringTimeout                      | same                                                       |
 * | changePermissionsInIdleState, changeWaitTimeInIdleState    | changeConfig is not part of this API                       |
 * | changePermissionsCountWhileOneThreadIs{Running,Waiting}…   | changeConfig is not part of this API                       |
 * | changeWaitingTimeWhileOneThreadIsWaitingForPermission      | changeConfig is not part of this API                       |
 * | changePermissionsConcurrentlyWithDetailedLockTesting       | changeConfig and locks are not part of this API            |
 * | shouldCreateBulkheadRegistryWithRegistryStore              | registry stores are not part of this API                   |
 * | the virtual-thread parameterisation of every case          | there are no threads                                        |
 */

function bulkheadOf(
  name: string,
  overrides: Partial<BulkheadConfig>,
): { bulkhead: BulkheadPolicy; clock: VirtualClock } {
  const clock = new VirtualClock();
  return { clock, bulkhead: new BulkheadPolicy(name, { ...BULKHEAD_SCHEMA.defaults, ...overrides }, clock) };
}

/** A call that holds its permit until released. */
function holding(bulkhead: BulkheadPolicy): { done: Promise<unknown>; release: () => void } {
  let release!: () => void;
  const done = bulkhead
    .execute(() => new Promise<void>((resolve) => (release = resolve)))
    .then(
      () => 'ok',
      (e: unknown) => e,
    );
  return { done, release: () => release() };
}

describe('Resilience4j SemaphoreBulkheadTest, ported', () => {
  it('shouldReturnTheCorrectName', () => {
    expect(bulkheadOf('test', { maxConcurrentCalls: 2 }).bulkhead.name).toBe('test');
  });

  it('shouldHandleBasicBulkheadOperationsInBothThreadModes', async () => {
    const { bulkhead } = bulkheadOf('test', { maxConcurrentCalls: 2, maxWaitDuration: 0 });
    const events: string[] = [];
    bulkhead.onCallPermitted(() => events.push('CALL_PERMITTED'));
    bulkhead.onCallRejected(() => events.push('CALL_REJECTED'));
    bulkhead.onCallFinished(() => events.push('CALL_FINISHED'));

    const first = holding(bulkhead);
    const second = holding(bulkhead);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(0);
    const third = await holding(bulkhead).done;
    expect(third).toBeInstanceOf(BulkheadFullError);

    first.release();
    await first.done;
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    second.release();
    await second.done;
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(2);

    const fourth = holding(bulkhead);
    expect(bulkhead.metrics.availableConcurrentCalls).toBe(1);
    expect(events).toEqual([
      'CALL_PERMITTED',
      'CALL_PERMITTED',
      'CALL_REJECTED',
      'CALL_FINISHED',
      'CALL_FINISHED',
      'CALL_PERMITTED',
    ]);
    fourth.release();
    await fourth.done;
  });

  it('testCreateWithDefaults', () => {
    const { bulkhead } = bulkheadOf('test', {});
    expect(bulkhead.config.maxConcurrentCalls).toBe(25);
    expect(bulkhead.config.maxWaitDuration).toBe(0);
  });

  it('shouldHandleTimeoutBehaviorConsistentlyInBothThreadModes: a waiter is refused after maxWaitDuration', async () => {
    const { bulkhead, clock } = bulkheadOf('timeoutTest', { maxConcurrentCalls: 1, maxWaitDuration: 50 });
    const entered = holding(bulkhead);
    let refusedAt: number | undefined;
    const waiter = bulkhead
      .execute(() => 'never')
      .catch((e: unknown) => {
        refusedAt = clock.now();
        return e;
      });
    await clock.advance(49);
    expect(refusedAt).toBeUndefined();
    await clock.advance(1);
    expect(await waiter).toBeInstanceOf(BulkheadFullError);
    expect(refusedAt).toBe(50);
    entered.release();
    await entered.done;
  });

  it('testZeroMaxConcurrentCalls', () => {
    const { bulkhead } = bulkheadOf('test', { maxConcurrentCalls: 0, maxWaitDuration: 0 });
    expect(bulkhead.tryEnter()).toBe(NO_PERMIT);
  });

  it('testEntryTimeout', async () => {
    const { bulkhead, clock } = bulkheadOf('test', { maxConcurrentCalls: 1, maxWaitDuration: 10 });
    expect(bulkhead.tryEnter()).not.toBe(NO_PERMIT);
    const entered = bulkhead.execute(() => 'entered').catch((e: unknown) => e);
    await clock.advance(10);
    expect(await entered).toMatchObject({ reason: 'wait-timeout' });
  });
});
