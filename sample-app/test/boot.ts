import { HttpService } from '@nestjs/axios';
import { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import {
  IdempotencyStore,
  RESILIENCE_MODULE_OPTIONS,
  ResilienceExceptionFilter,
  ResilienceModuleOptions,
  VirtualClock,
} from 'resilience4nest';
import { createPlatformApp, initPlatformApp, Platform } from '../../test/support/platforms';
import { AppModule, shopResilienceOptions } from '../src/app.module';
import { Dependencies } from '../src/downstream/dependencies';
import { SHOP_EVENTS, ShopEvents } from '../src/events/shop-events';
import { SHOP_IDEMPOTENCY_STORE } from '../src/ops/ops.module';
import { SHOP_DATABASE, ShopDatabase } from '../src/ops/shop-database';
import { ClockDriver } from './clock-driver';

/** The sample app booted by {@link bootSampleApp}. */
export interface BootedSampleApp {
  /** The initialized application. */
  readonly app: INestApplication;
  /** The clock the resilience module reads time from. */
  readonly clock: VirtualClock;
  /** Moves `clock` while requests are unanswered; call `restore()` before closing `app`. */
  readonly driver: ClockDriver;
}

/**
 * Boots the sample app with its resilience options (the YAML and its idempotency settings), but with the
 * module's time on a fresh {@link VirtualClock} and its jitter fixed at 0.5,
 * and with the {@link ResilienceExceptionFilter} installed globally.
 *
 * @param logger - The Nest logger setting of the application.
 * @param platform - The HTTP platform the app runs on.
 * @param idempotencyStore - Makes the shop's idempotency store (on the module's clock) instead of the one from the environment.
 * @param beforeInit - Configures the application before it is initialized (a middleware in front of every route, say).
 * @param options - Module options added to the shop's (e.g. `faultInjection` for a game day).
 * @param database - Makes the shop's database instead of the one from the environment.
 * @param events - Makes the shop's event transport instead of the one from the environment.
 */
export async function bootSampleApp(
  logger: NestApplicationOptions['logger'],
  platform: Platform = 'express',
  idempotencyStore?: (clock: VirtualClock) => { store: IdempotencyStore; close: () => Promise<void> },
  beforeInit?: (app: INestApplication) => void,
  options: ResilienceModuleOptions = {},
  database?: () => ShopDatabase,
  events?: () => ShopEvents,
): Promise<BootedSampleApp> {
  const clock = new VirtualClock();
  const storeIo = { inFlight: 0 };
  let builder = Test.createTestingModule({ imports: [AppModule] });
  if (idempotencyStore !== undefined) {
    builder = builder.overrideProvider(SHOP_IDEMPOTENCY_STORE).useFactory({
      factory: () => {
        const made = idempotencyStore(clock);
        return { ...made, store: countingCalls(made.store, storeIo) };
      },
    });
  }
  if (database !== undefined) builder = builder.overrideProvider(SHOP_DATABASE).useFactory({ factory: database });
  if (events !== undefined) builder = builder.overrideProvider(SHOP_EVENTS).useFactory({ factory: events });
  const moduleRef = await builder
    .overrideProvider(RESILIENCE_MODULE_OPTIONS)
    .useFactory({
      inject: [ConfigService, Dependencies, SHOP_IDEMPOTENCY_STORE, SHOP_DATABASE, SHOP_EVENTS],
      factory: (
        config: ConfigService,
        dependencies: Dependencies,
        idempotency: { store: IdempotencyStore },
        shopDatabase: ShopDatabase,
        shopEvents: ShopEvents,
      ) => ({
        ...shopResilienceOptions(config, dependencies, idempotency, shopDatabase, shopEvents),
        clock,
        random: () => 0.5,
        ...options,
      }),
    })
    .compile();
  const app = createPlatformApp(moduleRef, platform, { logger });
  app.useGlobalFilters(new ResilienceExceptionFilter());
  beforeInit?.(app);
  await initPlatformApp(app);
  return {
    app,
    clock,
    driver: new ClockDriver(app.get(Dependencies), clock, app.get(HttpService).axiosRef, () => storeIo.inFlight),
  };
}

/** `target` with every method call counted in `io.inFlight` until its promise settles. */
function countingCalls<T extends object>(target: T, io: { inFlight: number }): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        io.inFlight++;
        return Promise.resolve(value.apply(object, args)).finally(() => io.inFlight--);
      };
    },
  });
}
