import { TestingModule, Test } from '@nestjs/testing';
import { ResilienceModule, ResilienceModuleOptions, VirtualClock } from '../../lib';

/** A booted testing module whose policies and providers share one virtual clock. */
export interface Scenario {
  readonly moduleRef: TestingModule;
  readonly clock: VirtualClock;
}

/**
 * Boots `ResilienceModule.forRoot` on a fresh {@link VirtualClock} (also
 * provided as `VirtualClock`, so simulated dependencies wait on it) with the
 * given providers, as the e2e suites do.
 */
export async function bootScenario(providers: unknown[], options: ResilienceModuleOptions = {}): Promise<Scenario> {
  const clock = new VirtualClock();
  const compiled = await Test.createTestingModule({
    imports: [ResilienceModule.forRoot({ clock, random: () => 0, ...options })],
    providers: [{ provide: VirtualClock, useValue: clock }, ...(providers as never[])],
  }).compile();
  compiled.useLogger(false);
  return { moduleRef: await compiled.init(), clock };
}

/** How one call ended, read on the virtual clock. */
export interface Settled {
  readonly startedAt: number;
  settledAt?: number;
  value?: unknown;
  error?: unknown;
}

/** Starts `call` now and notes when and how it settles, without ever rejecting. */
export function track(clock: VirtualClock, call: () => Promise<unknown>): Settled {
  const record: Settled = { startedAt: clock.now() };
  call().then(
    (value) => {
      record.settledAt = clock.now();
      record.value = value;
    },
    (error: unknown) => {
      record.settledAt = clock.now();
      record.error = error;
    },
  );
  return record;
}
