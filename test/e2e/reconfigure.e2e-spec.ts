import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  CallNotPermittedError,
  CircuitBreaker,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
  VirtualClock,
} from '../../lib';

class Unavailable extends Error {
  readonly status = 503;
}

@Injectable()
class Inventory {
  calls = 0;

  @Retry('inventory')
  @CircuitBreaker('inventory')
  async shared(): Promise<string> {
    this.calls++;
    throw new Unavailable();
  }

  @Retry('inventory', { waitDuration: 0 })
  async own(): Promise<string> {
    this.calls++;
    throw new Unavailable();
  }
}

describe('a decorated method after its instance is reconfigured', () => {
  it('runs with the new settings, through the shared instance and through its own', async () => {
    const clock = new VirtualClock();
    const app = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          metrics: false,
          logging: false,
          retry: { instances: { inventory: { maxAttempts: 2, waitDuration: 0 } } },
          circuitBreaker: { instances: { inventory: { slidingWindowSize: 10, minimumNumberOfCalls: 10 } } },
        }),
      ],
      providers: [Inventory],
    }).compile();
    await app.init();
    const inventory = app.get(Inventory);
    const registry = app.get(ResilienceRegistry);

    await expect(inventory.shared()).rejects.toBeInstanceOf(Unavailable);
    await expect(inventory.own()).rejects.toBeInstanceOf(Unavailable);
    expect(inventory.calls).toBe(4);

    const events = registry.reconfigure('retry', 'inventory', { maxAttempts: 4 });
    registry.reconfigure('circuitBreaker', 'inventory', { minimumNumberOfCalls: 4 });
    expect(events.map((e) => (e.after as { maxAttempts: number }).maxAttempts)).toEqual([4, 4]);

    inventory.calls = 0;
    await expect(inventory.own()).rejects.toBeInstanceOf(Unavailable);
    expect(inventory.calls).toBe(4);
    // Two attempts were recorded before the change: two more reach the new minimum and open the breaker,
    // which refuses the third attempt.
    const refused = await inventory.shared().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Unavailable);
    expect((refused as Error).cause).toBeInstanceOf(CallNotPermittedError);
    expect(inventory.calls).toBe(6);
    expect(registry.circuitBreaker('inventory').state).toBe('OPEN');
    await app.close();
  });
});
