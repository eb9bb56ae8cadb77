import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defer, lastValueFrom, Observable, of } from 'rxjs';
import {
  CircuitBreaker,
  Fallback,
  Idempotent,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
  TooManyInstancesError,
  VirtualClock,
} from '../../lib';
import * as composition from '../../lib/engine/layer-composition';
import { KEY_NOT_A_STRING } from '../../lib/kernel/resilience.messages';

const byHost = (host: string): string => host;

/** Calls that reached each host. */
const reached: string[] = [];

/** Whether the breaker's key function of `chargeOnceByHost` answers no string. */
const keyFunction = { broken: false };

@Injectable()
class PaymentsClient {
  @Fallback(TooManyInstancesError, 'busy')
  @CircuitBreaker('payments', { key: byHost })
  async charge(host: string): Promise<string> {
    reached.push(host);
    return `charged at ${host}`;
  }

  @Fallback(TooManyInstancesError, 'busy')
  @CircuitBreaker('payments', { key: byHost })
  quote(host: string): Observable<string> {
    return defer(() => {
      reached.push(host);
      return of(`quote from ${host}`);
    });
  }

  @Fallback(Error, (_host: string, error: Error) => `answered ${error.name}`)
  @CircuitBreaker('payments', { key: () => 42 as unknown as string })
  async badKey(_host: string): Promise<string> {
    return 'never';
  }

  @Fallback(Error, (_host: string, error: Error) => `answered ${error.name}`)
  @CircuitBreaker('payments', {
    key: () => {
      throw new RangeError('no host');
    },
  })
  async throwingKey(_host: string): Promise<string> {
    return 'never';
  }

  @Fallback(Error, (_host: string, error: Error) => `answered ${error.name}`)
  @CircuitBreaker('payments', { key: () => 42 as unknown as string })
  badKeyQuote(_host: string): Observable<string> {
    return of('never');
  }

  @Fallback(TooManyInstancesError, 'busy')
  @Retry('payments', { maxAttempts: 1 })
  @CircuitBreaker('payments', { key: byHost })
  async chargeWithRetry(host: string): Promise<string> {
    reached.push(host);
    return `charged at ${host}`;
  }

  @Idempotent({ key: (_host: string, id: string) => id })
  @CircuitBreaker('payments', { key: byHost })
  async chargeOnce(host: string, _id: string): Promise<string> {
    reached.push(host);
    return `charged at ${host}`;
  }

  @Idempotent({ key: (_host: string, id: string) => id })
  @CircuitBreaker('payments', { key: (host: string) => (keyFunction.broken ? (undefined as unknown as string) : host) })
  async chargeOnceByHost(host: string, _id: string): Promise<string> {
    reached.push(host);
    return `charged at ${host}`;
  }

  // No declared return type: the first call finds out what the method returns.
  @Fallback(TooManyInstancesError, 'busy')
  @CircuitBreaker('payments', { key: byHost })
  undeclaredPromise(host: string) {
    return Promise.resolve(`charged at ${host}`);
  }

  @Fallback(TooManyInstancesError, 'busy')
  @CircuitBreaker('payments', { key: byHost })
  undeclaredObservable(host: string) {
    return of(`quote from ${host}`);
  }

  busy(host: string, error: TooManyInstancesError): string {
    return `busy: ${error.policy} ${error.instance} refused ${error.key === host ? 'the host' : 'another key'}`;
  }
}

async function appWithOneKey(clock: VirtualClock): Promise<{ client: PaymentsClient; registry: ResilienceRegistry }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ResilienceModule.forRoot({
        clock,
        metrics: false,
        circuitBreaker: { keys: { max: 1, idleTimeout: '1h' }, instances: { payments: {} } },
      }),
    ],
    providers: [PaymentsClient],
  }).compile();
  await moduleRef.init();
  return { client: moduleRef.get(PaymentsClient), registry: moduleRef.get(ResilienceRegistry) };
}

describe('@Fallback answers a refusal of the keys', () => {
  beforeEach(() => {
    reached.length = 0;
  });

  it('answers TooManyInstancesError, as it answers a breaker refusal, for a Promise and an Observable method', async () => {
    const { client, registry } = await appWithOneKey(new VirtualClock());
    await expect(client.charge('a.example')).resolves.toBe('charged at a.example');
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToForcedOpenState();
    await expect(client.charge('b.example')).resolves.toBe('busy: circuitBreaker payments refused the host');
    await expect(lastValueFrom(client.quote('b.example'))).resolves.toBe(
      'busy: circuitBreaker payments refused the host',
    );
    await expect(client.chargeWithRetry('b.example')).resolves.toBe('busy: circuitBreaker payments refused the host');
    expect(reached).toEqual(['a.example']);
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToClosedState();
    await expect(client.chargeWithRetry('a.example')).resolves.toBe('charged at a.example');
  });

  it('releases the idempotency key of a call refused for its keys: nothing ran, so the same key runs later', async () => {
    const { client, registry } = await appWithOneKey(new VirtualClock());
    await client.chargeOnce('a.example', 'op-1');
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToForcedOpenState();
    await expect(client.chargeOnce('b.example', 'op-2')).rejects.toBeInstanceOf(TooManyInstancesError);
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToClosedState();
    await expect(client.chargeOnce('b.example', 'op-2')).resolves.toBe('charged at b.example');
    expect(reached).toEqual(['a.example', 'b.example']);
  });

  it('releases the idempotency key of a call whose key function answers no string: nothing ran', async () => {
    const { client } = await appWithOneKey(new VirtualClock());
    keyFunction.broken = true;
    await expect(client.chargeOnceByHost('a.example', 'op-3')).rejects.toBeInstanceOf(TypeError);
    keyFunction.broken = false;
    await expect(client.chargeOnceByHost('a.example', 'op-3')).resolves.toBe('charged at a.example');
    expect(reached).toEqual(['a.example']);
  });

  it('answers TooManyInstancesError for a method with no declared return type, a Promise or an Observable one', async () => {
    const { client, registry } = await appWithOneKey(new VirtualClock());
    await expect(client.undeclaredPromise('a.example')).resolves.toBe('charged at a.example');
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToForcedOpenState();
    await expect(client.undeclaredPromise('b.example')).resolves.toBe('busy: circuitBreaker payments refused the host');
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToClosedState();
    await expect(lastValueFrom(client.undeclaredObservable('a.example'))).resolves.toBe('quote from a.example');
    registry.circuitBreaker('payments', { key: 'a.example' }).transitionToForcedOpenState();
    await expect(lastValueFrom(client.undeclaredObservable('b.example'))).resolves.toBe(
      'busy: circuitBreaker payments refused the host',
    );
  });

  it('answers a key function that throws or answers no string', async () => {
    const { client } = await appWithOneKey(new VirtualClock());
    await expect(client.badKey('a.example')).resolves.toBe('answered TypeError');
    await expect(client.throwingKey('a.example')).resolves.toBe('answered RangeError');
    await expect(lastValueFrom(client.badKeyQuote('a.example'))).resolves.toBe('answered TypeError');
  });
});

describe('registry.pipeline(options, { key }) with a fallback', () => {
  function registryOf(): ResilienceRegistry {
    return new ResilienceRegistry({
      clock: new VirtualClock(),
      circuitBreaker: { keys: { max: 1, idleTimeout: '1h' }, instances: { payments: {} } },
    });
  }

  it('answers TooManyInstancesError and a key function that answers no string through its fallback', async () => {
    const registry = registryOf();
    const answered: string[] = [];
    const perHost = registry.pipeline(
      {
        circuitBreaker: 'payments',
        fallback: {
          errors: [TooManyInstancesError, TypeError],
          handler: (error) => {
            answered.push((error as Error).name);
            return 'fallback';
          },
        },
      },
      { key: byHost },
    );
    await expect(perHost.execute(() => Promise.resolve('a'), { args: ['a'] })).resolves.toBe('a');
    registry.circuitBreaker('payments', { key: 'a' }).transitionToForcedOpenState();
    await expect(perHost.execute(() => Promise.resolve('b'), { args: ['b'] })).resolves.toBe('fallback');
    await expect(lastValueFrom(perHost.observe(of('b'), { args: ['b'] }))).resolves.toBe('fallback');
    await expect(perHost.execute(() => Promise.resolve('c'), { args: [7] })).resolves.toBe('fallback');
    expect(answered).toEqual(['TooManyInstancesError', 'TooManyInstancesError', 'TypeError']);
  });

  it('without a fallback, still refuses with the error itself', async () => {
    const registry = registryOf();
    const perHost = registry.pipeline({ circuitBreaker: 'payments' }, { key: byHost });
    await expect(perHost.execute(() => Promise.resolve(1), { args: [7] })).rejects.toThrow(
      new TypeError(KEY_NOT_A_STRING("pipeline 'pipeline'", '7')),
    );
  });
});

describe('a keyed pipeline builds its Observable composition once per key', () => {
  afterEach(() => jest.restoreAllMocks());

  it('builds one composition per key, however many subscriptions', async () => {
    const registry = new ResilienceRegistry({ clock: new VirtualClock(), circuitBreaker: { instances: { p: {} } } });
    const perHost = registry.pipeline('p', { key: byHost });
    const builds = jest.spyOn(composition, 'observableComposition');
    for (let i = 0; i < 3; i++)
      for (const host of ['a', 'b'])
        await expect(lastValueFrom(perHost.observe(of(i), { args: [host] }))).resolves.toBe(i);
    expect(builds).toHaveBeenCalledTimes(2);
    expect(registry.circuitBreaker('p', { key: 'a' }).metrics.numberOfSuccessfulCalls).toBe(3);
  });
});
