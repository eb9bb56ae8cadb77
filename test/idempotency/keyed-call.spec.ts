import { BadRequestException, INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { VirtualClock } from '../../lib/kernel/clock';
import {
  CallNotPermittedError,
  downstreamIdempotencyKey,
  Idempotent,
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReuseError,
  IdempotencyOutcomeEvent,
  IdempotencyReconciler,
  IdempotencyRegistry,
  IdempotencyStore,
  ResilienceModule,
  StaleIdempotencyKey,
} from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { Gate, ScriptedHandler } from './http-kit';
import { memoryTarget, postgresTarget, redisTarget } from './store-targets';

const START = Date.UTC(2025, 0, 1);
const LEASE = 30_000;

interface StockReserved {
  readonly id: string;
  readonly sku: string;
  readonly qty: number;
}

/** A message consumer: the second argument is per-delivery transport data, as in Nest microservices. */
@Injectable()
class StockConsumer extends ScriptedHandler {
  readonly handled: string[] = [];

  @Idempotent({ key: (event: StockReserved) => event.id })
  async reserve(
    event: StockReserved,
    delivery: { attempt: number },
  ): Promise<{ reservation: string; downstream: string; attempt: number }> {
    this.handled.push(event.id);
    await this.proceed();
    return {
      reservation: `r-${this.handled.length}`,
      downstream: downstreamIdempotencyKey('warehouse'),
      attempt: delivery.attempt,
    };
  }

  @Idempotent({ key: (event?: { id?: string }) => event?.id, required: false })
  async optional(event?: { id?: string }): Promise<number> {
    this.handled.push(event?.id ?? '(none)');
    return this.handled.length;
  }

  @Idempotent({
    key: (event: { id: string }) => event.id,
    fingerprint: (event: { id: string; body: unknown }) => event.body,
  })
  async withFingerprint(event: { id: string; body: unknown; receivedAt: number }): Promise<void> {
    this.handled.push(`${event.id}@${event.receivedAt}`);
  }
}

describe.each([memoryTarget(), postgresTarget('keyed'), redisTarget('keyed')])(
  '@Idempotent({ key }) on a message handler: $name',
  (target) => {
    const url = target.server === undefined ? '' : serverOrSkip(target.server);
    if (url === undefined) return;

    let app: INestApplication;
    let clock: VirtualClock;
    let consumer: StockConsumer;
    let reconciler: IdempotencyReconciler | undefined;
    let outcomes: IdempotencyOutcomeEvent[];
    const event = (id: string, qty = 1): StockReserved => ({ id, sku: 'SKU-1', qty });

    beforeAll(() => target.setup(url));
    afterAll(() => target.teardown());
    beforeEach(async () => {
      clock = new VirtualClock(START);
      reconciler = undefined;
      const store: IdempotencyStore = target.create(clock);
      const moduleRef = await Test.createTestingModule({
        imports: [
          ResilienceModule.forRoot({
            clock,
            idempotency: {
              store,
              lease: '30s',
              reconciler: (stale: StaleIdempotencyKey) =>
                reconciler === undefined ? { action: 'wait' } : reconciler(stale),
            },
          }),
        ],
        providers: [StockConsumer],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      consumer = app.get(StockConsumer);
      outcomes = [];
      app.get(IdempotencyRegistry).onOutcome((e) => outcomes.push(e));
    });
    afterEach(() => app.close());

    it('returns the stored result to a redelivery without running again, whatever the delivery data', async () => {
      const first = await consumer.reserve(event('m-1'), { attempt: 1 });
      const again = await consumer.reserve(event('m-1'), { attempt: 2 });
      expect(first).toEqual({ reservation: 'r-1', downstream: expect.any(String), attempt: 1 });
      expect(again).toEqual(first);
      expect(consumer.handled).toEqual(['m-1']);
      expect(outcomes.map((o) => [o.outcome, o.transport, o.key])).toEqual([
        ['executed', 'call', 'm-1'],
        ['replayed', 'call', 'm-1'],
      ]);
    });

    it('runs once for 50 concurrent deliveries of one message', async () => {
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) => consumer.reserve(event('m-50'), { attempt: i })),
      );
      expect(consumer.handled).toEqual(['m-50']);
      for (const result of results) {
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(IdempotencyKeyInProgressError);
      }
      expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
    });

    it('refuses a duplicate while the first runs, with the time left on the lease', async () => {
      const gate = new Gate();
      consumer.gates.push(gate);
      const first = consumer.reserve(event('m-busy'), { attempt: 1 });
      await consumer.watch.until(() => consumer.handled.length === 1);
      await expect(consumer.reserve(event('m-busy'), { attempt: 2 })).rejects.toMatchObject({
        constructor: IdempotencyKeyInProgressError,
        retryAfterMs: LEASE,
        instance: 'StockConsumer.reserve',
      });
      gate.open();
      await first;
    });

    it('refuses the same key with another payload, even while the first runs', async () => {
      const gate = new Gate();
      consumer.gates.push(gate);
      const first = consumer.reserve(event('m-reuse', 1), { attempt: 1 });
      await consumer.watch.until(() => consumer.handled.length === 1);
      await expect(consumer.reserve(event('m-reuse', 2), { attempt: 1 })).rejects.toBeInstanceOf(
        IdempotencyKeyReuseError,
      );
      gate.open();
      await first;
      await expect(consumer.reserve(event('m-reuse', 2), { attempt: 1 })).rejects.toBeInstanceOf(
        IdempotencyKeyReuseError,
      );
    });

    it('fingerprints what the fingerprint option picks', async () => {
      await consumer.withFingerprint({ id: 'f-1', body: { a: 1, b: 2 }, receivedAt: 1 });
      await consumer.withFingerprint({ id: 'f-1', body: { b: 2, a: 1 }, receivedAt: 2 });
      await expect(consumer.withFingerprint({ id: 'f-1', body: { a: 2 }, receivedAt: 3 })).rejects.toBeInstanceOf(
        IdempotencyKeyReuseError,
      );
      expect(consumer.handled).toEqual(['f-1@1']);
    });

    it('refuses a call whose key function returns nothing, unless the key is optional', async () => {
      await expect(consumer.reserve({ id: '', sku: 'x', qty: 1 }, { attempt: 1 })).rejects.toThrow(
        IdempotencyKeyMissingError,
      );
      expect(await consumer.optional()).toBe(1);
      expect(await consumer.optional()).toBe(2);
      expect(await consumer.optional({ id: 'o-1' })).toBe(3);
      expect(await consumer.optional({ id: 'o-1' })).toBe(3);
      expect(await consumer.optional({ id: '' })).toBe(4);
      // A key that is not a string is a bug in the key function, not a key left out.
      await expect(consumer.optional({ id: 7 as unknown as string })).rejects.toThrow(IdempotencyKeyMissingError);
      expect(consumer.handled).toHaveLength(4);
      expect(outcomes.map((o) => o.outcome)).toEqual([
        'missing_key',
        'bypassed',
        'bypassed',
        'executed',
        'replayed',
        'bypassed',
        'missing_key',
      ]);
    });

    it.each([
      ['a refusal before any call left', new CallNotPermittedError('stock', 'OPEN')],
      ['a 4xx answer', new BadRequestException('no such SKU')],
    ])('releases the key after %s, so a redelivery runs', async (_, error) => {
      consumer.failNext = error;
      await expect(consumer.reserve(event('m-released'), { attempt: 1 })).rejects.toBe(error);
      await expect(consumer.reserve(event('m-released'), { attempt: 2 })).resolves.toMatchObject({ attempt: 2 });
      expect(consumer.handled).toEqual(['m-released', 'm-released']);
      expect(outcomes.map((o) => o.outcome)).toEqual(['released', 'executed']);
    });

    it('keeps the key after an error of unknown outcome: in progress until the lease ends, then unresolved without a reconciler', async () => {
      consumer.failNext = new Error('warehouse timed out');
      await expect(consumer.reserve(event('m-unknown'), { attempt: 1 })).rejects.toThrow('warehouse timed out');
      await expect(consumer.reserve(event('m-unknown'), { attempt: 2 })).rejects.toBeInstanceOf(
        IdempotencyKeyInProgressError,
      );
      await clock.advance(LEASE);
      await expect(consumer.reserve(event('m-unknown'), { attempt: 3 })).rejects.toBeInstanceOf(
        IdempotencyKeyInProgressError,
      );
      expect(consumer.handled).toEqual(['m-unknown']);
      expect(outcomes.map((o) => o.outcome)).toEqual(['kept_unknown', 'in_progress', 'kept_unknown']);
    });

    it("lets a reconciler resolve a stale key with the earlier attempt's result, or run it again with the same downstream key", async () => {
      consumer.failNext = new Error('crashed');
      await expect(consumer.reserve(event('m-a'), { attempt: 1 })).rejects.toThrow('crashed');
      consumer.failNext = new Error('crashed');
      await expect(consumer.reserve(event('m-b'), { attempt: 1 })).rejects.toThrow('crashed');
      await clock.advance(LEASE);
      const seen: StaleIdempotencyKey[] = [];
      reconciler = (stale) => {
        seen.push(stale);
        return stale.key === 'm-a'
          ? {
              action: 'complete',
              value: { reservation: 'found', downstream: stale.downstreamKey('warehouse'), attempt: 1 },
            }
          : { action: 'run' };
      };
      const resolved = await consumer.reserve(event('m-a'), { attempt: 2 });
      expect(resolved.reservation).toBe('found');
      expect(await consumer.reserve(event('m-a'), { attempt: 3 })).toEqual(resolved);
      const rerun = await consumer.reserve(event('m-b'), { attempt: 2 });
      expect(rerun.downstream).toBe(seen[1].downstreamKey('warehouse'));
      expect(seen.map((s) => [s.transport, s.key, s.args?.[1]])).toEqual([
        ['call', 'm-a', { attempt: 2 }],
        ['call', 'm-b', { attempt: 2 }],
      ]);
      expect(consumer.handled).toEqual(['m-a', 'm-b', 'm-b']);
      expect(outcomes.map((o) => o.outcome)).toEqual([
        'kept_unknown',
        'kept_unknown',
        'reconciled',
        'replayed',
        'executed',
      ]);
    });

    it('gives every attempt at one message the same downstream key, and other messages other keys', async () => {
      const a = await consumer.reserve(event('m-d1'), { attempt: 1 });
      const b = await consumer.reserve(event('m-d2'), { attempt: 1 });
      expect(a.downstream).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(b.downstream).not.toBe(a.downstream);
    });
  },
);
