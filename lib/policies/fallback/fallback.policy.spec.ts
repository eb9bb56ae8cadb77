import { CallNotPermittedError, TimeoutExceededError } from '../../kernel/errors';
import { concatWith, lastValueFrom, Observable, of, throwError, toArray } from 'rxjs';
import { FallbackHandlerSpec, FallbackPolicy } from './fallback.policy';
import type { FallbackEvent } from './fallback.events';
import { DUPLICATE_FALLBACK } from './fallback.messages';
import { underFallback } from '../../../test/support/pipelines';

class PaymentError extends Error {}
class PaymentDeclinedError extends PaymentError {}
class CardExpiredError extends PaymentDeclinedError {}
class InsufficientFundsError extends PaymentDeclinedError {}

function failWith(error: unknown): (args: unknown[]) => Promise<never> {
  return () => Promise.reject(error);
}

describe('FallbackPolicy', () => {
  it('picks the most specific declared ancestor, whatever the declaration order', async () => {
    const specs: FallbackHandlerSpec[] = [
      { errors: [Error], handler: () => 'any error' },
      { errors: [PaymentError], handler: () => 'payment error' },
      { errors: [PaymentDeclinedError], handler: () => 'declined' },
    ];
    for (const order of [specs, [...specs].reverse(), [specs[1], specs[0], specs[2]]]) {
      const fallback = new FallbackPolicy('charge', order);
      await expect(underFallback(fallback, failWith(new CardExpiredError()), [])).resolves.toBe('declined');
      await expect(underFallback(fallback, failWith(new PaymentError()), [])).resolves.toBe('payment error');
      await expect(underFallback(fallback, failWith(new RangeError()), [])).resolves.toBe('any error');
    }
  });

  it('tells the call that never left from the call whose outcome is unknown', async () => {
    const fallback = new FallbackPolicy('charge', [
      { errors: [Error], handler: () => ({ status: 'pending', outcome: 'unknown' }) },
      { errors: [CallNotPermittedError], handler: () => ({ status: 'rejected', charged: false }) },
    ]);
    await expect(
      underFallback(fallback, failWith(new CallNotPermittedError('payments', 'OPEN', 5000)), []),
    ).resolves.toEqual({
      status: 'rejected',
      charged: false,
    });
    await expect(underFallback(fallback, failWith(new TimeoutExceededError('payments', 2000)), [])).resolves.toEqual({
      status: 'pending',
      outcome: 'unknown',
    });
  });

  it('lets one handler cover an array of classes', async () => {
    const fallback = new FallbackPolicy('charge', [
      {
        errors: [CardExpiredError, InsufficientFundsError],
        handler: (_args, error) => (error as Error).constructor.name,
      },
    ]);
    await expect(underFallback(fallback, failWith(new CardExpiredError()), [])).resolves.toBe('CardExpiredError');
    await expect(underFallback(fallback, failWith(new InsufficientFundsError()), [])).resolves.toBe(
      'InsufficientFundsError',
    );
  });

  it('rethrows the original error when no class matches', async () => {
    const fallback = new FallbackPolicy('charge', [{ errors: [PaymentDeclinedError], handler: () => 'declined' }]);
    const original = new PaymentError('gateway down');
    await expect(underFallback(fallback, failWith(original), [])).rejects.toBe(original);
  });

  it('rethrows non-Error throws untouched', async () => {
    const fallback = new FallbackPolicy('charge', [{ errors: [Error], handler: () => 'handled' }]);
    await expect(underFallback(fallback, failWith('plain string'), [])).rejects.toBe('plain string');
    await expect(underFallback(fallback, failWith(undefined), [])).rejects.toBeUndefined();
    await expect(underFallback(fallback, failWith(null), [])).rejects.toBeNull();
    const bare = Object.create(null) as object;
    await expect(underFallback(fallback, failWith(bare), [])).rejects.toBe(bare);
  });

  it('propagates a business error the handler throws', async () => {
    class PaymentRefusedError extends Error {}
    const fallback = new FallbackPolicy('charge', [
      {
        errors: [PaymentDeclinedError],
        handler: () => {
          throw new PaymentRefusedError('card declined');
        },
      },
      { errors: [InsufficientFundsError], handler: () => Promise.reject(new PaymentRefusedError('no funds')) },
    ]);
    await expect(underFallback(fallback, failWith(new CardExpiredError()), [])).rejects.toThrow(
      new PaymentRefusedError('card declined'),
    );
    await expect(underFallback(fallback, failWith(new InsufficientFundsError()), [])).rejects.toThrow(
      PaymentRefusedError,
    );
  });

  it('gives the handler the original arguments and the error', async () => {
    const handler = jest.fn((args: unknown[]) => Promise.resolve(`fallback for ${String(args[0])}`));
    const fallback = new FallbackPolicy('inventory', [{ errors: [Error], handler }]);
    const error = new Error('down');
    const args = ['sku-1', 3];
    await expect(
      underFallback(fallback, (a: unknown[]) => (a.length ? Promise.reject(error) : 'never'), args),
    ).resolves.toBe('fallback for sku-1');
    expect(handler).toHaveBeenCalledWith(args, error);
  });

  it('handles a synchronous throw from the method', async () => {
    const fallback = new FallbackPolicy('charge', [{ errors: [TypeError], handler: () => 'recovered' }]);
    const next = (): never => {
      throw new TypeError('sync');
    };
    await expect(underFallback(fallback, next, [])).resolves.toBe('recovered');
  });

  it('returns the method result and stays silent when the call succeeds', async () => {
    const handler = jest.fn();
    const fallback = new FallbackPolicy('charge', [{ errors: [Error], handler }]);
    const events: FallbackEvent[] = [];
    fallback.onFallback((e) => events.push(e));
    await expect(underFallback(fallback, (args) => (args[0] as number) + 1, [41])).resolves.toBe(42);
    expect(handler).not.toHaveBeenCalled();
    expect(events).toEqual([]);
  });

  it('emits onFallback with the matched class, even when the handler throws', async () => {
    const fallback = new FallbackPolicy('charge', [
      { errors: [PaymentDeclinedError], handler: () => 'declined' },
      {
        errors: [PaymentError],
        handler: (_args, error) => {
          throw error;
        },
      },
    ]);
    const events: FallbackEvent[] = [];
    const unsubscribe = fallback.onFallback((e) => events.push(e));
    const expired = new CardExpiredError();
    const broken = new PaymentError();
    await underFallback(fallback, failWith(expired), []);
    await expect(underFallback(fallback, failWith(broken), [])).rejects.toBe(broken);
    await expect(underFallback(fallback, failWith(new RangeError()), [])).rejects.toBeInstanceOf(RangeError);
    unsubscribe();
    await underFallback(fallback, failWith(expired), []);

    expect(events).toEqual([
      { name: 'charge', errorClass: PaymentDeclinedError, error: expired },
      { name: 'charge', errorClass: PaymentError, error: broken },
    ]);
  });

  it('caches the choice per thrown class and keeps answering the same', async () => {
    const fallback = new FallbackPolicy('charge', [
      { errors: [PaymentError], handler: () => 'payment' },
      { errors: [CardExpiredError], handler: () => 'expired' },
    ]);
    for (let i = 0; i < 3; i++) {
      await expect(underFallback(fallback, failWith(new CardExpiredError()), [])).resolves.toBe('expired');
      await expect(underFallback(fallback, failWith(new InsufficientFundsError()), [])).resolves.toBe('payment');
      await expect(underFallback(fallback, failWith(new Error()), [])).rejects.toBeInstanceOf(Error);
    }
  });

  it('refuses two handlers for the same class', () => {
    expect(
      () =>
        new FallbackPolicy('charge', [
          { errors: [PaymentError], handler: () => 1 },
          { errors: [CardExpiredError, PaymentError], handler: () => 2 },
        ]),
    ).toThrow(DUPLICATE_FALLBACK('charge', 'PaymentError'));
  });

  it('reports each counted call to onCall listeners until they unsubscribe', () => {
    const policy = new FallbackPolicy('charge', []);
    policy.countCall();
    let calls = 0;
    const stop = policy.onCall(() => calls++);
    policy.countCall();
    policy.countCall();
    stop();
    policy.countCall();
    expect(calls).toBe(2);
  });
});

describe('FallbackPolicy on an Observable', () => {
  const failing = (error: unknown): Observable<string> => throwError(() => error);

  it('keeps the values of a call that succeeds and runs no handler', async () => {
    const handler = jest.fn();
    const fallback = new FallbackPolicy('quotes', [{ errors: [Error], handler }]);
    await expect(lastValueFrom(fallback.observe(of('a', 'b'), []).pipe(toArray()))).resolves.toEqual(['a', 'b']);
    expect(handler).not.toHaveBeenCalled();
  });

  it("continues with the handler's answer: an Observable's values, a promise's value, or the value itself", async () => {
    const answers: Record<string, unknown> = {
      observable: of('cached-1', 'cached-2'),
      promise: Promise.resolve('from promise'),
      value: 'plain',
      nothing: undefined,
      empty: null,
      thenless: { then: 'not a function' },
    };
    const fallback = new FallbackPolicy('quotes', [{ errors: [Error], handler: (args) => answers[String(args[0])] }]);
    const run = (kind: string): Promise<unknown[]> =>
      lastValueFrom(
        fallback.observe(of('before').pipe(concatWith(failing(new Error('down')))), [kind]).pipe(toArray()),
      );

    await expect(run('observable')).resolves.toEqual(['before', 'cached-1', 'cached-2']);
    await expect(run('promise')).resolves.toEqual(['before', 'from promise']);
    await expect(run('value')).resolves.toEqual(['before', 'plain']);
    await expect(run('nothing')).resolves.toEqual(['before', undefined]);
    await expect(run('empty')).resolves.toEqual(['before', null]);
    await expect(run('thenless')).resolves.toEqual(['before', { then: 'not a function' }]);
  });

  it('passes on an error no handler declares, and one the handler throws or rejects with', async () => {
    class Refused extends Error {}
    const refused = new Refused('refused');
    const fallback = new FallbackPolicy('quotes', [
      {
        errors: [TypeError],
        handler: () => {
          throw refused;
        },
      },
      { errors: [RangeError], handler: () => Promise.reject(refused) },
    ]);
    const unknown = new SyntaxError('unexpected');
    await expect(lastValueFrom(fallback.observe(failing(unknown), []))).rejects.toBe(unknown);
    await expect(lastValueFrom(fallback.observe(failing(new TypeError()), []))).rejects.toBe(refused);
    await expect(lastValueFrom(fallback.observe(failing(new RangeError()), []))).rejects.toBe(refused);
  });

  it('gives the handler the arguments and the error, on each subscription', async () => {
    const calls: unknown[][] = [];
    const fallback = new FallbackPolicy('quotes', [
      {
        errors: [Error],
        handler: (args, error) => {
          calls.push([args, error]);
          return calls.length;
        },
      },
    ]);
    const error = new Error('down');
    const guarded = fallback.observe(failing(error), ['GBP']);
    await expect(lastValueFrom(guarded)).resolves.toBe(1);
    await expect(lastValueFrom(guarded)).resolves.toBe(2);
    expect(calls).toEqual([
      [['GBP'], error],
      [['GBP'], error],
    ]);
  });
});
