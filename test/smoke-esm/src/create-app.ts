import { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ResilienceExceptionFilter } from 'resilience4nest';
import { AppModule } from './app.module.js';

export async function createApp(logger?: LoggerService): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule, logger === undefined ? {} : { logger });
  app.useGlobalFilters(new ResilienceExceptionFilter()); // 503 + Retry-After, 504, problem+json
  return app;
}
