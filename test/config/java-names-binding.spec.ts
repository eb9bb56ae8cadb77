import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ErrorMatcher } from '../../lib/config/error-matcher';
import {
  BulkheadFullError,
  fromSpringConfig,
  Idempotent,
  IdempotencyRegistry,
  MemoryIdempotencyStore,
  ResilienceModule,
  ResilienceRegistry,
  TimeoutExceededError,
  VirtualClock,
} from '../../lib';

/** What a refused connection looks like in Node: the condition `java.io.IOException` stands for. */
const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
/** An error of a Node class that happens to carry the Java class's simple name. */
class IOException extends Error {}

/** A message consumer whose key is released when its call timed out (kept as of unknown outcome by default). */
@Injectable()
class Consumer {
  readonly handled: string[] = [];
  timeOut = true;

  @Idempotent({ key: (id: string) => id, releaseOn: ['java.util.concurrent.TimeoutException'] })
  async handle(id: string): Promise<number> {
    this.handled.push(id);
    if (this.timeOut) throw new TimeoutExceededError('warehouse', 2000);
    return this.handled.length;
  }
}

/** Runs three failing calls through breaker `name`: one refused, one `IOException`, one `RangeError`; answers its counts. */
async function recorded(registry: ResilienceRegistry, name: string): Promise<{ failed: number; successful: number }> {
  const breaker = registry.circuitBreaker(name);
  for (const error of [refused(), new IOException('eof'), new RangeError('bad')])
    await expect(breaker.execute(() => Promise.reject(error))).rejects.toBe(error);
  return { failed: breaker.metrics.numberOfFailedCalls, successful: breaker.metrics.numberOfSuccessfulCalls };
}

describe('where a Java exception name is bound to the Node errors it stands for', () => {
  it('not in the matcher: config/ knows no Java name, so a name given to it matches by class name alone', () => {
    const matcher = new ErrorMatcher(['java.io.IOException']);
    expect(matcher.matches(refused())).toBe(false);
    expect(matcher.matches(new IOException('eof'))).toBe(true);
  });

  it('when the registry binds options written in code: the list holds a class standing for the name', async () => {
    const registry = new ResilienceRegistry({
      metrics: false,
      circuitBreaker: { instances: { psp: { recordExceptions: ['java.io.IOException', 'TypeError'] } } },
    });
    const [standIn, plain] = registry.circuitBreaker('psp').config.recordExceptions;
    expect({ kind: typeof standIn, name: (standIn as { name: string }).name, plain }).toEqual({
      kind: 'function',
      name: 'java.io.IOException',
      plain: 'TypeError',
    });
    // The refused connection by the mapping, the IOException by its class name; the RangeError is not listed.
    expect(await recorded(registry, 'psp')).toEqual({ failed: 2, successful: 1 });
  });

  it('when fromSpringConfig binds an application.yml, and the registry its options', async () => {
    const options = fromSpringConfig({
      'resilience4j.circuitbreaker.instances.psp.record-exceptions': 'java.io.IOException',
    });
    // The options fromSpringConfig answers keep the names as written: they are bound where they are used.
    expect(options.circuitBreaker?.instances?.psp).toEqual({ 'record-exceptions': 'java.io.IOException' });
    expect(await recorded(new ResilienceRegistry({ ...options, metrics: false }), 'psp')).toEqual({
      failed: 2,
      successful: 1,
    });
  });

  it('when a live change is bound: registry.reconfigure maps the names of its patch too', async () => {
    const registry = new ResilienceRegistry({ metrics: false, circuitBreaker: { instances: { psp: {} } } });
    registry.reconfigure('circuitBreaker', 'psp', { recordExceptions: ['java.net.ConnectException'] });
    // ConnectException stands for refused connections only; the IOException and the RangeError are not listed.
    expect(await recorded(registry, 'psp')).toEqual({ failed: 1, successful: 2 });
  });

  it("keeps what a breaker does with Resilience4j's own exceptions and timeouts when their names are bound", async () => {
    const registry = new ResilienceRegistry({
      metrics: false,
      circuitBreaker: {
        instances: {
          bulkheads: { recordExceptions: ['io.github.resilience4j.bulkhead.BulkheadFullException'] },
          timeouts: { recordExceptions: ['java.util.concurrent.TimeoutException'] },
          neither: { recordExceptions: ['java.io.IOException'] },
        },
      },
    });
    const failedOn = async (name: string, error: Error): Promise<number> => {
      const breaker = registry.circuitBreaker(name);
      await expect(breaker.execute(() => Promise.reject(error))).rejects.toBe(error);
      return breaker.metrics.numberOfFailedCalls;
    };
    // A BulkheadFullError counts only where the list names it; a timeout only where it is listed.
    expect(await failedOn('bulkheads', new BulkheadFullError('inner', 'queue-full'))).toBe(1);
    expect(await failedOn('neither', new BulkheadFullError('inner', 'queue-full'))).toBe(0);
    expect(await failedOn('timeouts', new TimeoutExceededError('inner', 2000))).toBe(1);
    expect(await failedOn('neither', new TimeoutExceededError('inner', 2000))).toBe(0);
  });

  it("when @Idempotent's releaseOn is bound: a timeout releases the key, so a redelivery runs", async () => {
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: false,
          idempotency: { store: new MemoryIdempotencyStore({ clock }) },
        }),
      ],
      providers: [Consumer],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: false }).init();
    try {
      const consumer = app.get(Consumer);
      const outcomes: string[] = [];
      app.get(IdempotencyRegistry).onOutcome((e) => outcomes.push(e.outcome));
      await expect(consumer.handle('m-1')).rejects.toBeInstanceOf(TimeoutExceededError);
      consumer.timeOut = false;
      await expect(consumer.handle('m-1')).resolves.toBe(2);
      expect(outcomes).toEqual(['released', 'executed']);
    } finally {
      await app.close();
    }
  });

  it('binds one class per name, so options bound twice are equal and a reload changes nothing', () => {
    const bind = () =>
      new ResilienceRegistry({
        metrics: false,
        retry: { instances: { a: { retryExceptions: ['java.util.concurrent.TimeoutException'] } } },
      }).retry('a').config.retryExceptions;
    expect(bind()).toEqual(bind());
    expect(bind()[0]).toBe(bind()[0]);
  });
});
