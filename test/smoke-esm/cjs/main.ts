// A CommonJS NestJS 12 application (the layout of `nest new` without ES modules): it loads
// resilience4nest with require(), and NestJS's ES modules through Node's require(esm).
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  CircuitBreaker,
  ResilienceExceptionFilter,
  ResilienceModule,
  ResilienceRegistry,
  Retry,
} from 'resilience4nest';

@Injectable()
class Flaky {
  calls = 0;

  @Retry('flaky')
  @CircuitBreaker('flaky')
  async answer(): Promise<{ calls: number }> {
    if (++this.calls < 3) throw Object.assign(new Error('flaky dependency unavailable'), { status: 503 });
    return { calls: this.calls };
  }
}

@Controller('flaky')
class FlakyController {
  constructor(private readonly flaky: Flaky) {}

  @Get()
  answer(): Promise<{ calls: number }> {
    return this.flaky.answer();
  }
}

@Module({
  imports: [ResilienceModule.forRoot({ retry: { instances: { flaky: { maxAttempts: 3, waitDuration: '10ms' } } } })],
  controllers: [FlakyController],
  providers: [Flaky],
})
class AppModule {}

async function main(): Promise<void> {
  assert.equal(typeof module, 'object', 'this check must run as a CommonJS module');
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.useGlobalFilters(new ResilienceExceptionFilter());
  await app.listen(0, '127.0.0.1');
  try {
    const { port } = app.getHttpServer().address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/flaky`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { calls: 3 });
    const breaker = app.get(ResilienceRegistry).circuitBreaker('flaky');
    assert.deepEqual([breaker.metrics.numberOfFailedCalls, breaker.metrics.numberOfSuccessfulCalls], [2, 1]);
    console.log('CommonJS consumer on NestJS 12: @Retry and @CircuitBreaker wired, answered over HTTP');
  } finally {
    await app.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
