import { NestFactory } from '@nestjs/core';
import { ResilienceExceptionFilter } from 'resilience4nest';
import { AppModule } from './app.module';
import { Dependencies } from './downstream/dependencies';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.useGlobalFilters(new ResilienceExceptionFilter());
  app.enableShutdownHooks();
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
