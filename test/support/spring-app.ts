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

/** An HTTP client error carrying a status, as axios and Nest's HttpException do. */
export const httpError = (status: number): Error => Object.assign(new Error(`HTTP ${status}`), { status });

/** The error of a real connection to a closed port on 127.0.0.1 (fetch failed, ECONNREFUSED). */
export async function refusedConnection(port: number): Promise<never> {
  const response = await fetch(`http://127.0.0.1:${port}/`);
  throw new Error(`expected ECONNREFUSED, got HTTP ${response.status}`);
}

/**
 * Advances virtual time in steps until `promise` settles (bounded), letting
 * real I/O run between steps, which `VirtualClock.runUntilSettled` does not wait for.
 */
export async function drive<T>(clock: VirtualClock, promise: Promise<T>, step = 10): Promise<T> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 1000 && !settled; i++) {
    await clock.advance(step);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return promise;
}
