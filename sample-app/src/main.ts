import { NestFactory } from '@nestjs/core';
import { ResilienceExceptionFilter } from 'resilience4nest';
import { AppModule } from './app.module';
import { INVENTORY_API, PAYMENT_PROVIDER } from './downstream/tokens';
import { SimulatedDependency } from './downstream/simulated-dependency';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.useGlobalFilters(new ResilienceExceptionFilter());
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  for (const token of [INVENTORY_API, PAYMENT_PROVIDER]) {
    const dependency = app.get<SimulatedDependency>(token);
    console.log(`simulated ${dependency.name}: ${dependency.url} (admin: POST ${dependency.url}/__admin)`);
  }
  console.log(`sample app: http://127.0.0.1:${port}`);
}

void bootstrap();
