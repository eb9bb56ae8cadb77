import { spawn } from 'node:child_process';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import { ResilienceExceptionFilter, ResilienceRegistry } from '../../lib';

const root = join(__dirname, '..', '..');

describe('README quick start', () => {
  let pricing: Server;
  let app: INestApplication;
  let seenDeadline: string | undefined;

  beforeAll(async () => {
    pricing = createServer((req, res) => {
      seenDeadline = req.headers['x-request-deadline-ms'] as string | undefined;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ sku: req.url?.split('/').pop(), price: 1250 }));
    });
    await new Promise<void>((resolve) => pricing.listen(0, '127.0.0.1', resolve));
    process.env.PRICING_URL = `http://127.0.0.1:${(pricing.address() as AddressInfo).port}`;
    const { AppModule } = await import('../../docs/examples/quick-start');
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.useGlobalFilters(new ResilienceExceptionFilter());
    await app.init();
  });

  afterAll(async () => {
    await app.close();
    await new Promise((resolve) => pricing.close(resolve));
    delete process.env.PRICING_URL;
  });

  it('is embedded in the README exactly as the compiled, tested file', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const example = readFileSync(join(root, 'docs', 'examples', 'quick-start.ts'), 'utf8');
    expect(readme).toContain('```ts run=quick-start\n' + example + '```');
  });

  it('answers through the pipeline and passes the remaining deadline downstream', async () => {
    const { body } = await request(app.getHttpServer()).get('/quotes/sku-1').expect(200);
    expect(body).toEqual({ sku: 'sku-1', price: 1250 });
    expect(Number(seenDeadline)).toBeGreaterThan(0);
    expect(Number(seenDeadline)).toBeLessThanOrEqual(800);
  });

  it('falls back to an explicit unknown price while the breaker refuses calls', async () => {
    app.get(ResilienceRegistry).circuitBreaker('pricing').transitionToForcedOpenState();
    const { body } = await request(app.getHttpServer()).get('/quotes/sku-1').expect(200);
    expect(body).toEqual({ sku: 'sku-1', price: 'unknown' });
  });
});

describe('README quick start entry point', () => {
  it('docs/examples/main.ts starts the application and it answers (embedded in the README as written)', async () => {
    const main = readFileSync(join(root, 'docs', 'examples', 'main.ts'), 'utf8');
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('```ts run=quick-start-main\n' + main + '```');
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        '-r',
        'tsconfig-paths/register',
        join(root, 'docs', 'examples', 'main.ts'),
      ],
      // Nothing listens on PRICING_URL: the call fails and the application answers with an error, not silence.
      { cwd: root, env: { ...process.env, PORT: String(port), PRICING_URL: 'http://127.0.0.1:9' }, stdio: 'ignore' },
    );
    try {
      let status = 0;
      for (let i = 0; i < 600 && status === 0; i++) {
        status = await fetch(`http://127.0.0.1:${port}/quotes/sku-1`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBeGreaterThanOrEqual(500);
    } finally {
      child.kill();
    }
  }, 90_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
