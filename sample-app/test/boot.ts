import { HttpService } from '@nestjs/axios';
import { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { RESILIENCE_MODULE_OPTIONS, ResilienceExceptionFilter, ResilienceModuleOptions, VirtualClock } from 'resilience4nest';
import { createPlatformApp, initPlatformApp, Platform } from '../../test/support/platforms';
import { AppModule } from '../src/app.module';
import { Dependencies } from '../src/downstream/dependencies';
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
 * Boots the sample app with its configured resilience options, but with the
 * module's time on a fresh {@link VirtualClock} and its jitter fixed at 0.5,
 * and with the {@link ResilienceExceptionFilter} installed globally.
 *
 * @param logger - The Nest logger setting of the application.
 * @param platform - The HTTP platform the app runs on.
 */
export async function bootSampleApp(logger: NestApplicationOptions['logger'], platform: Platform = 'express'): Promise<BootedSampleApp> {
  const clock = new VirtualClock();
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(RESILIENCE_MODULE_OPTIONS)
    .useFactory({
      inject: [ConfigService],
      factory: (config: ConfigService) => ({ ...config.getOrThrow<ResilienceModuleOptions>('resilience4j'), clock, random: () => 0.5 }),
    })
    .compile();
  const app = createPlatformApp(moduleRef, platform, { logger });
  app.useGlobalFilters(new ResilienceExceptionFilter());
  await initPlatformApp(app);
  return { app, clock, driver: new ClockDriver(app.get(Dependencies), clock, app.get(HttpService).axiosRef) };
}
