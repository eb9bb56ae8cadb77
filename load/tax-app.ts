import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Bulkhead, CircuitBreaker, Fallback, ResilienceModule, Retry, Timeout } from '../lib';

/*
 * The app of `npm run load -- tax`, started in a child process:
 * `tax-app.ts <express|fastify> <without|with|deadline> <port>`. A trivial
 * route, and (with the module) a provider elsewhere whose methods carry the
 * full stack, as in an app where only some routes call a dependency;
 * `deadline` also configures deadline propagation, which puts every request
 * in a scope.
 */

@Injectable()
class Payments {
  @Fallback(Error, () => 'declined')
  @Retry('psp')
  @CircuitBreaker('psp')
  @Timeout('psp')
  @Bulkhead('psp')
  async charge(): Promise<string> {
    return 'charged';
  }
}

@Controller()
class PingController {
  @Get('ping')
  ping(): string {
    return 'pong';
  }
}

@Module({ controllers: [PingController] })
class WithoutModule {}

@Module({
  imports: [ResilienceModule.forRoot({ metrics: false })],
  controllers: [PingController],
  providers: [Payments],
})
class WithModule {}

@Module({
  imports: [ResilienceModule.forRoot({ metrics: false, deadline: {} })],
  controllers: [PingController],
  providers: [Payments],
})
class WithDeadline {}

const APPS: Readonly<Record<string, Type>> = { without: WithoutModule, with: WithModule, deadline: WithDeadline };

async function main(): Promise<void> {
  const [platform, variant, port] = process.argv.slice(2);
  const root = APPS[variant];
  if (root === undefined) throw new Error(`unknown variant '${variant}': expected ${Object.keys(APPS).join(', ')}`);
  const app =
    platform === 'fastify'
      ? await NestFactory.create(root, new FastifyAdapter(), { logger: false })
      : await NestFactory.create(root, { logger: false });
  await app.listen(Number(port), '127.0.0.1');
  // The parent reads this process's CPU time around each run.
  process.on('message', () => {
    const { user, system } = process.cpuUsage();
    process.send?.(user + system);
  });
  process.send?.('listening');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
