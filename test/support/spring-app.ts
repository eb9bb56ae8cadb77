import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INestApplication, Logger, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { fromSpringConfig, ResilienceModule, ResilienceRegistry, SpringConfigOptions, VirtualClock } from '../../lib';

/** The text of a file under test/fixtures/spring. */
export const springFixture = (name: string): string =>
  readFileSync(join(__dirname, '..', 'fixtures', 'spring', name), 'utf8');

/** A Nest application booted on a Spring file, with the warnings it logged. */
export interface BootedSpringApp<S> {
  app: INestApplication;
  service: S;
  registry: ResilienceRegistry;
  clock: VirtualClock;
  warnings: string[];
}

/** Boots `service` in a Nest app whose ResilienceModule reads `text` through fromSpringConfig, on a virtual clock. */
export async function bootSpringApp<S>(
  text: string,
  service: Type<S>,
  options?: SpringConfigOptions,
): Promise<BootedSpringApp<S>> {
  const clock = new VirtualClock();
  const warnings: string[] = [];
  const spy = jest
    .spyOn(Logger.prototype, 'warn')
    .mockImplementation((message: unknown) => void warnings.push(String(message)));
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          ...fromSpringConfig(text, options),
          clock,
          random: () => 0.5,
          metrics: false,
          logging: false,
        }),
      ],
      providers: [service, { provide: VirtualClock, useValue: clock }],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return { app, service: app.get(service), registry: app.get(ResilienceRegistry), clock, warnings };
  } finally {
    spy.mockRestore();
  }
}

/** The error `promise` rejects with (a fulfilment fails the test). */
export const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`);
    },
    (error: unknown) => error,
  );
