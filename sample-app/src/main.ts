import { NestFactory } from '@nestjs/core';
import { hostname } from 'node:os';
import { Outbox, ResilienceExceptionFilter } from 'resilience4nest';
import { AppModule } from './app.module';
import { Dependencies } from './downstream/dependencies';
import { SHOP_EVENTS, ShopEvents } from './events/shop-events';
import { FULFILMENT_GROUP, startFulfilmentConsumer } from './fulfilment/fulfilment.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.useGlobalFilters(new ResilienceExceptionFilter());
  app.enableShutdownHooks();
  // Initialized first, so the consumer's handler is ready for entries already waiting in the stream.
  await app.init();
  const { redis } = app.get<ShopEvents>(SHOP_EVENTS);
  if (app.get(Outbox).configured && redis !== undefined) {
    await startFulfilmentConsumer(app, { client: redis, consumer: `fulfilment-${hostname()}-${process.pid}` });
    console.log(
      `payment.captured: recorded with each payment (DATABASE_URL), published to the Redis stream 'payment.captured' (REDIS_URL), shipped by consumer group '${FULFILMENT_GROUP}'`,
    );
  } else {
    const missing = ['DATABASE_URL', 'REDIS_URL'].filter((name) => !process.env[name]).join(' and ');
    console.log(
      `payment.captured: off (${missing} not set): payments are charged but not recorded, nothing is shipped`,
    );
  }
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  for (const dependency of app.get(Dependencies).all()) {
    console.log(
      `simulated ${dependency.name}: ${dependency.url} (break it: POST /admin/dependencies/${dependency.name})`,
    );
  }
  console.log(`sample app: http://127.0.0.1:${port}`);
}

void bootstrap();
