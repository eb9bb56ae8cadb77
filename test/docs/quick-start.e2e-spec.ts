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
  // Started as a program, in CommonJS and as an ES module, by test/docs/doc-programs.spec.ts (run=quick-start-main).
  it('is embedded in the README exactly as docs/examples/main.ts', () => {
    const main = readFileSync(join(root, 'docs', 'examples', 'main.ts'), 'utf8');
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('```ts run=quick-start-main\n' + main + '```');
  });
});
