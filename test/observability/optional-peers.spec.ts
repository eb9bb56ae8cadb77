/*
 * prom-client and @nestjs/terminus are optional peers: with both made
 * unresolvable, the package must still load and boot, and only the features
 * that need them fail, naming the package.
 */
// A function declaration (hoisted, like the jest.mock calls) that throws as Node does for a package that is not installed.
function mockNotInstalled(peer: string): () => never {
  return () => {
    throw Object.assign(new Error(`Cannot find module '${peer}' from 'lib/kernel/optional-peer.ts'`), {
      code: 'MODULE_NOT_FOUND',
    });
  };
}
jest.mock('prom-client', mockNotInstalled('prom-client'));
jest.mock('@nestjs/terminus', mockNotInstalled('@nestjs/terminus'));

import { Test } from '@nestjs/testing';
import type * as Lib from '../../lib';

describe('without prom-client and @nestjs/terminus', () => {
  // Required, not imported, so the mocks above are in place first and a load failure is this test's failure.
  const load = (): typeof Lib => require('../../lib') as typeof Lib;

  it('the peers really are unresolvable here', () => {
    expect(() => require('prom-client')).toThrow("Cannot find module 'prom-client'");
    expect(() => require('@nestjs/terminus')).toThrow("Cannot find module '@nestjs/terminus'");
  });

  it('lib/index loads', () => {
    const lib = load();
    expect(lib.ResilienceModule).toBeDefined();
    expect(lib.ResilienceHealthIndicator).toBeDefined();
    expect(lib.ResilienceEndpointsModule).toBeDefined();
  });

  it('an app boots with default options (metrics off for want of prom-client), and the health check names terminus', async () => {
    const { ResilienceModule, ResilienceHealthIndicator, ResilienceMetrics } = load();
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ circuitBreaker: { instances: { a: { registerHealthIndicator: true } } } })],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    expect(moduleRef.get(ResilienceMetrics).registry).toBeUndefined();
    expect(() => moduleRef.get(ResilienceHealthIndicator).check()).toThrow(
      /ResilienceHealthIndicator needs the optional peer dependency '@nestjs\/terminus'.*npm install @nestjs\/terminus/,
    );
    await moduleRef.close();
  });

  it('metrics asked for explicitly fail the start, naming prom-client', async () => {
    const { ResilienceModule } = load();
    await expect(
      Test.createTestingModule({ imports: [ResilienceModule.forRoot({ metrics: true })] }).compile(),
    ).rejects.toThrow(
      /module option 'metrics' needs the optional peer dependency 'prom-client'.*in a bundled app.*or give your own registry: ResilienceModule\.forRoot\(\{ metrics: \{ registry \} \}\)/,
    );
  });

  it('the /metrics endpoint fails the start, saying metrics are off', async () => {
    const { ResilienceModule, ResilienceEndpointsModule } = load();
    const { METRICS_DISABLED } =
      require('../../lib/observability/observability.messages') as typeof import('../../lib/observability/observability.messages');
    await expect(
      Test.createTestingModule({
        imports: [ResilienceModule.forRoot(), ResilienceEndpointsModule.forRoot({ metrics: true })],
      }).compile(),
    ).rejects.toThrow(METRICS_DISABLED("ResilienceEndpointsModule's metrics endpoint"));
  });
});
