import { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { TestingModule } from '@nestjs/testing';

/** The HTTP platforms the e2e suites run on. */
export type Platform = 'express' | 'fastify';

/** Every platform, for `describe.each(PLATFORMS)`. */
export const PLATFORMS: readonly Platform[] = ['express', 'fastify'];

/**
 * Creates the application of `moduleRef` on `platform` (not initialized):
 * Express through Nest's default adapter, Fastify through a fresh
 * `FastifyAdapter`.
 */
export function createPlatformApp(
  moduleRef: TestingModule,
  platform: Platform,
  options: NestApplicationOptions = { logger: false },
): INestApplication {
  if (platform === 'express') return moduleRef.createNestApplication(options);
  return moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), options);
}

/**
 * Initializes `app` and, on Fastify, waits until its routes are ready, so
 * `app.getHttpServer()` answers requests (supertest) without `listen`.
 */
export async function initPlatformApp<T extends INestApplication>(app: T): Promise<T> {
  await app.init();
  const adapter = app.getHttpAdapter();
  if (adapter instanceof FastifyAdapter) await adapter.getInstance().ready();
  return app;
}

/** The media type of a `Content-Type` value, without parameters (Express adds `; charset=utf-8` to text bodies). */
export function mediaType(contentType: string | null | undefined): string | undefined {
  return contentType?.split(';')[0].trim();
}
