import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { ResilienceModule, ResilienceModuleOptions, ResilienceRegistry } from '../../lib';
import { NO_ASYNC_OPTIONS } from '../../lib/config/config.messages';

const root = join(__dirname, '..', '..');

/** The README's forRootAsync + @nestjs/config recipe, run as written: its block saved as a module beside an application.yml. */
describe("README's forRootAsync + @nestjs/config recipe", () => {
  let dir: string;
  let AppModule: Type<unknown>;
  let recipe: string;

  beforeAll(() => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```ts[^\n]*\n([\s\S]*?)```/g)]
      .map((m) => m[1])
      .filter((code) => code.includes('forRootAsync'));
    expect(blocks).toHaveLength(1);
    dir = mkdtempSync(join(__dirname, '.recipe-'));
    recipe = blocks[0];
    writeFileSync(join(dir, 'app.module.ts'), recipe);
    copyFileSync(join(root, 'test', 'fixtures', 'spring', 'dotted-root.yml'), join(dir, 'application.yml'));
    ({ AppModule } = require(join(dir, 'app.module.ts')) as { AppModule: Type<unknown> });
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('uses nothing an ES module lacks (the layout `nest new` makes on NestJS 12)', () => {
    expect(recipe).not.toMatch(/__dirname|__filename|require\(/);
  });

  it('boots with the settings of the application.yml in the directory the app starts in', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const cwd = process.cwd();
    try {
      process.chdir(dir);
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      const registry = moduleRef.get(ResilienceRegistry);
      expect(registry.circuitBreaker('payments').config).toMatchObject({
        slidingWindowSize: 10,
        minimumNumberOfCalls: 5,
        waitDurationInOpenState: 10_000,
      });
      expect(registry.retry('inventory').config.maxAttempts).toBe(3);
      expect(registry.timeLimiter('inventory').config.timeoutDuration).toBe(2000);
      await moduleRef.close();
    } finally {
      process.chdir(cwd);
      warn.mockRestore();
    }
  });
});

describe('forRootAsync with a factory that finds no options', () => {
  it('fails the start, naming the dotted-root-key case, rather than booting with nothing configured', async () => {
    const build = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({
          ignoreEnvFile: true,
          load: [() => ({ 'resilience4j.circuitbreaker': { instances: { a: { 'sliding-window-size': 5 } } } })],
        }),
        ResilienceModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => config.get('resilience4j') as ResilienceModuleOptions,
        }),
      ],
    }).compile();
    await expect(build).rejects.toThrow(NO_ASYNC_OPTIONS(undefined));
  });
});
