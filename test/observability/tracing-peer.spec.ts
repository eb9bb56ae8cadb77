/*
 * @opentelemetry/api is an optional peer: without it the package loads and
 * boots as before, nothing of OpenTelemetry is loaded and no policy gains a
 * listener; `tracing: true` fails the start naming the package.
 */
// A function declaration (hoisted, like the jest.mock call) that throws as Node does for a package that is not installed.
function mockNotInstalled(peer: string): () => never {
  return () => {
    throw Object.assign(new Error(`Cannot find module '${peer}' from 'lib/kernel/optional-peer.ts'`), {
      code: 'MODULE_NOT_FOUND',
    });
  };
}
jest.mock('@opentelemetry/api', mockNotInstalled('@opentelemetry/api'));

import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type * as Lib from '../../lib';

describe('without @opentelemetry/api', () => {
  // Required, not imported, so the mock above is in place first.
  const load = (): typeof Lib => require('../../lib') as typeof Lib;

  it('the peer really is unresolvable here', () => {
    expect(() => require('@opentelemetry/api')).toThrow("Cannot find module '@opentelemetry/api'");
  });

  it('an app boots, records nothing and leaves the policies without listeners', async () => {
    const { ResilienceModule, ResilienceRegistry, ResilienceTracing, Retry } = load();
    @Injectable()
    class Client {
      @Retry('backend')
      async call(): Promise<number> {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ metrics: false, logging: false })],
      providers: [Client],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    expect(moduleRef.get(ResilienceTracing).active).toBe(false);
    await expect(moduleRef.get(Client).call()).resolves.toBe(1);
    const retry = moduleRef.get(ResilienceRegistry).retry('backend');
    // Each stream is private; its `active` flag is what makes a policy build an event at all.
    const streams = Object.values(retry).filter((v): v is { active: boolean } => typeof v?.active === 'boolean');
    expect(streams.length).toBeGreaterThan(0);
    expect(streams.every((s) => !s.active)).toBe(true);
    await moduleRef.close();
  });

  it('tracing asked for explicitly fails the start, naming the package', async () => {
    const { ResilienceModule } = load();
    await expect(
      Test.createTestingModule({ imports: [ResilienceModule.forRoot({ tracing: true, metrics: false })] }).compile(),
    ).rejects.toThrow(/module option 'tracing' needs the optional peer dependency '@opentelemetry\/api'/);
  });
});
