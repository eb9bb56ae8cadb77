import { VirtualClock } from '../kernel/clock';
import { FallbackPolicy } from '../policies/fallback/fallback.policy';
import { FallbackShare } from './fallback-share';
import { underFallback } from '../../test/support/pipelines';

class Outage extends Error {}

/** A fallback policy, and a call of its method reported to it as the method's pipeline reports one. */
function guarded(name: string) {
  const policy = new FallbackPolicy(name, [{ errors: [Outage], handler: () => 'fallback' }]);
  const call = (fail: boolean): Promise<unknown> => {
    policy.countCall();
    return underFallback(policy, () => (fail ? Promise.reject(new Outage()) : Promise.resolve('ok')), []);
  };
  return { policy, call };
}

describe('FallbackShare', () => {
  it('gives the share of calls answered by a fallback, overall and per method', async () => {
    const clock = new VirtualClock();
    const share = new FallbackShare(clock, 60_000);
    const a = guarded('A.a');
    const b = guarded('B.b');
    share.track(a.policy);
    share.track(b.policy);
    await a.call(false);
    await a.call(true);
    await b.call(true);
    await b.call(true);
    expect(share.snapshot()).toEqual({
      calls: 4,
      fallbacks: 3,
      share: 75,
      methods: { 'A.a': { calls: 2, fallbacks: 1, share: 50 }, 'B.b': { calls: 2, fallbacks: 2, share: 100 } },
    });
  });

  it('counts a pipeline named __proto__ under its name, touching no prototype', async () => {
    const share = new FallbackShare(new VirtualClock(), 60_000);
    const proto = guarded('__proto__');
    share.track(proto.policy);
    await proto.call(true);
    const { methods } = share.snapshot();
    expect(Object.keys(methods)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(methods, '__proto__')?.value).toEqual({
      calls: 1,
      fallbacks: 1,
      share: 100,
    });
  });

  it('forgets what fell out of the window, a tenth of it at a time', async () => {
    const clock = new VirtualClock();
    const share = new FallbackShare(clock, 10_000);
    const a = guarded('A.a');
    share.track(a.policy);
    await a.call(true);
    await clock.advance(5_000);
    await a.call(false);
    await clock.advance(4_999);
    expect(share.snapshot()).toMatchObject({ calls: 2, fallbacks: 1 });
    await clock.advance(1);
    expect(share.snapshot()).toMatchObject({ calls: 1, fallbacks: 0, share: 0 });
    await clock.advance(5_000);
    expect(share.snapshot()).toMatchObject({ calls: 0, fallbacks: 0, share: 0 });
  });

  it('stops counting when told', async () => {
    const share = new FallbackShare(new VirtualClock(), 60_000);
    const a = guarded('A.a');
    const stop = share.track(a.policy);
    stop();
    await a.call(true);
    expect(share.snapshot()).toEqual({ calls: 0, fallbacks: 0, share: 0, methods: {} });
  });
});
