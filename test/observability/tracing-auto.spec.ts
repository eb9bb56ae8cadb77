import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import * as otel from '@opentelemetry/api';
import { ResilienceModule, ResilienceRegistry, ResilienceTracing, Retry, Timeout } from '../../lib';
import { tracerProviderRegistered } from '../../lib/observability/tracing/resilience-tracing';

@Injectable()
class Client {
  @Retry('backend')
  @Timeout('backend')
  async call(): Promise<number> {
    return 1;
  }
}

/** Every event stream of `instance` (private fields): a policy builds an event only while its stream is active. */
function streamsOf(instance: object): Array<{ active: boolean }> {
  return Object.values(instance).filter(
    (v): v is { active: boolean } => typeof (v as { active?: unknown })?.active === 'boolean',
  );
}

describe('with @opentelemetry/api installed but no tracer provider registered', () => {
  it('the default (auto) subscribes to nothing: the policies run exactly as without tracing', async () => {
    expect(tracerProviderRegistered(otel)).toBe(false);
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ metrics: false, logging: false })],
      providers: [Client],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    expect(moduleRef.get(ResilienceTracing).active).toBe(false);
    await expect(moduleRef.get(Client).call()).resolves.toBe(1);
    const registry = moduleRef.get(ResilienceRegistry);
    const streams = [...streamsOf(registry.retry('backend')), ...streamsOf(registry.timeLimiter('backend'))];
    expect(streams.length).toBeGreaterThan(4);
    expect(streams.filter((s) => s.active)).toEqual([]);
    await moduleRef.close();
  });
});
