import { createApp } from './create-app.js';

async function bootstrap() {
  const app = await createApp();
  await app.listen(process.env.PORT ?? 3000, '127.0.0.1');
}
await bootstrap();
