import { INestApplication, INestApplicationContext, Logger, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { context, propagation, trace } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  FaultInjector,
  IdempotencyRegistry,
  Outbox,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
  ResilienceTracing,
} from 'resilience4nest';

/*
 * How each block of README.md and docs/*.md marked `run=<id>` is run, and what it must answer.
 * This file is copied beside the blocks and runs twice, in Node processes of their own: as
 * CommonJS (with ts-node) and, transpiled, as an ES module; `resilience4nest` is the built
 * package in both. So it imports packages only, and its answers are JSON.
 */

/** The exports of a block, loaded as a module (its top-level code runs then). */
type Load = () => Promise<Record<string, unknown>>;

/** A block loaded as a module and driven through its exports. */
export interface ModuleProgram {
  readonly kind: 'module';
  /** Loads the block (after setting up what it needs), drives it, and answers what it saw. */
  readonly run: (load: Load) => Promise<unknown>;
  /** What `run` answers, in both module systems. */
  readonly answer: unknown;
}

/** A block started as a program of its own (its top-level code is the entry point). */
export interface RunningProgram {
  /** What it has written to stdout so far. */
  readonly output: () => string;
  /** Its exit code, once it ends. */
  readonly exited: Promise<number | null>;
  /** Ends it. */
  readonly kill: () => void;
}

/** A block run as a process, with `env` added to the environment. */
export interface ProcessProgram {
  readonly kind: 'process';
  readonly run: (start: (env: Record<string, string>) => RunningProgram) => Promise<unknown>;
  readonly answer: unknown;
}

export type DocProgram = ModuleProgram | ProcessProgram;

/** The environment of the test servers the Jest global setup started (PostgreSQL and Redis). */
const postgresUrl = (): string => required('RESILIENCE_TEST_POSTGRES_URL');
const redisUrl = (): string => required('RESILIENCE_TEST_REDIS_URL');

function required(variable: string): string {
  const value = process.env[variable];
  if (!value) throw new Error(`${variable} is not set: the Jest global setup starts the test servers`);
  return value;
}

/** A stand-in for the pricing service the README's examples call, on a free loopback port. */
async function pricingService(): Promise<{ url: string; deadlines: string[]; close: () => Promise<void> }> {
  const deadlines: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    deadlines.push(String(req.headers['x-request-deadline-ms'] ?? ''));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ sku: req.url?.split('/').pop(), price: 1250 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, deadlines, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Runs `body` with the pricing service up and `PRICING_URL` naming it; answers what `body` answered. */
async function withPricing<T>(body: (deadlines: readonly string[]) => Promise<T>): Promise<T> {
  const pricing = await pricingService();
  try {
    return await withEnv({ PRICING_URL: pricing.url }, () => body(pricing.deadlines));
  } finally {
    await pricing.close();
  }
}

/** Runs `body` with `env` set, then puts the environment back. */
async function withEnv<T>(env: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, env);
  try {
    return await body();
  } finally {
    for (const [key, value] of Object.entries(before))
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
  }
}

/**
 * Runs `body` counting the calls of `crypto.timingSafeEqual`, the block's own included: the
 * module's exports are wrapped, and the ES-module bindings of `node:crypto` follow them.
 */
async function countingTimingSafeEqual<T>(body: () => Promise<T>): Promise<{ result: T; calls: number }> {
  const crypto = createRequire(join(process.cwd(), 'package.json'))('node:crypto') as typeof import('node:crypto');
  const original = crypto.timingSafeEqual;
  let calls = 0;
  crypto.timingSafeEqual = (a, b) => {
    calls++;
    return original(a, b);
  };
  syncBuiltinESMExports();
  try {
    return { result: await body(), calls };
  } finally {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  }
}

/** Runs `body` in a fresh directory holding `files` (path → content), as a process started there. */
async function inDirectory<T>(files: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'resilience4nest-doc-'));
  const cwd = process.cwd();
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    process.chdir(dir);
    return await body();
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The application context of `module`, closed after `body`. */
async function withContext<T>(module: unknown, body: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const app = await NestFactory.createApplicationContext(module as Type<unknown>, { logger: false });
  try {
    return await body(app);
  } finally {
    await app.close();
  }
}

/** The HTTP application of `module` on a free loopback port, closed after `body`. */
async function withHttp<T>(
  module: unknown,
  body: (url: string, app: INestApplication) => Promise<T>,
  prepare: (app: INestApplication) => void = () => undefined,
): Promise<T> {
  const app = await NestFactory.create(module as Type<unknown>, { logger: false });
  prepare(app);
  await app.listen(0, '127.0.0.1');
  try {
    return await body(await app.getUrl(), app);
  } finally {
    await app.close();
  }
}

/** An application closed after `body`, whatever happens in it. */
async function closing<T>(app: INestApplication, body: (url: string) => Promise<T>): Promise<T> {
  try {
    return await body((await app.getUrl()).replace('[::1]', '127.0.0.1'));
  } finally {
    await app.close();
  }
}

/** Status and JSON body of a request. */
async function json(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** Resets the global OpenTelemetry API, as a block that registered a tracer or a propagator leaves it. */
function resetOpenTelemetry(): void {
  trace.disable();
  context.disable();
  propagation.disable();
}

/** Polls `url` until the program answers, at most `tries` times 100 ms apart. */
async function firstAnswer(url: string, tries = 600): Promise<{ status: number; body: unknown }> {
  for (let i = 0; i < tries; i++) {
    const answer = await json(url).catch(() => undefined);
    if (answer !== undefined) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`nothing answered at ${url}`);
}

/** A free loopback port. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A Spring Boot file as users write it: a breaker and a retry under `resilience4j`. */
const APPLICATION_YML = [
  'resilience4j:',
  '  circuitbreaker:',
  '    instances:',
  '      payments:',
  '        sliding-window-size: 10',
  '        minimum-number-of-calls: 5',
  '        wait-duration-in-open-state: 10s',
  '  retry:',
  '    instances:',
  '      payments:',
  '        max-attempts: 3',
  '        wait-duration: 200ms',
  '',
].join('\n');

const registryOf = (app: INestApplicationContext): ResilienceRegistry => app.get(ResilienceRegistry);

type Bootstrap = (port: number, host?: string) => Promise<INestApplication>;

const QUOTE = { sku: 'sku-1', price: 1250 };

/** A block whose export `price(sku)` calls the pricing service through policies made in code. */
const pricedInCode = (): ModuleProgram => ({
  kind: 'module',
  run: (load) =>
    withPricing(async () => {
      const { price } = (await load()) as { price: (sku: string) => Promise<unknown> };
      return price('sku-1');
    }),
  answer: QUOTE,
});

/** A block whose export `start(port, host)` registers a tracer provider, then starts the quick start's application. */
const tracedApplication = (start: string): ModuleProgram => ({
  kind: 'module',
  run: (load) =>
    withPricing(async () => {
      Logger.overrideLogger(false);
      const bootstrap = (await load())[start] as Bootstrap;
      try {
        const app = await bootstrap(0, '127.0.0.1');
        const tracing = app.get(ResilienceTracing).active;
        return { ...(await closing(app, (url) => json(`${url}/quotes/sku-1`))), tracing };
      } finally {
        resetOpenTelemetry();
      }
    }),
  answer: { status: 200, body: QUOTE, tracing: true },
});

/** Every block marked `run=<id>`, by id. */
export const DOC_PROGRAMS: Readonly<Record<string, DocProgram>> = {
  'quick-start': {
    kind: 'module',
    run: (load) =>
      withPricing(async (deadlines) => {
        Logger.overrideLogger(false);
        const { bootstrap } = (await load()) as { bootstrap: Bootstrap };
        const answer = await closing(await bootstrap(0, '127.0.0.1'), (url) => json(`${url}/quotes/sku-1`));
        return { ...answer, deadlineSent: Number(deadlines[0]) > 0 };
      }),
    answer: { status: 200, body: QUOTE, deadlineSent: true },
  },

  'quick-start-main': {
    kind: 'process',
    run: async (start) => {
      const pricing = await pricingService();
      const port = await freePort();
      const program = start({ PORT: String(port), HOST: '127.0.0.1', PRICING_URL: pricing.url });
      try {
        return await firstAnswer(`http://127.0.0.1:${port}/quotes/sku-1`);
      } finally {
        program.kill();
        await pricing.close();
      }
    },
    answer: { status: 200, body: QUOTE },
  },

  'registry-breaker': pricedInCode(),

  'registry-pipeline': pricedInCode(),

  'config-recipe': {
    kind: 'module',
    run: (load) =>
      inDirectory({ 'application.yml': APPLICATION_YML }, async () => {
        const { AppModule } = await load();
        return withContext(AppModule, async (app) => {
          const { slidingWindowSize, waitDurationInOpenState } = registryOf(app).circuitBreaker('payments').config;
          return {
            slidingWindowSize,
            waitDurationInOpenState,
            maxAttempts: registryOf(app).retry('payments').config.maxAttempts,
          };
        });
      }),
    answer: { slidingWindowSize: 10, waitDurationInOpenState: 10_000, maxAttempts: 3 },
  },

  'traced-bootstrap': tracedApplication('tracedBootstrap'),

  'testing-your-code': {
    kind: 'module',
    run: async (load) => {
      const { quoteWhilePricingIsDown } = (await load()) as {
        quoteWhilePricingIsDown: () => Promise<{ error: unknown; events: string[]; elapsedMs: number }>;
      };
      const { error, events, elapsedMs } = await quoteWhilePricingIsDown();
      return { code: (error as { code?: string }).code, events, elapsedMs };
    },
    answer: {
      code: 'ECONNREFUSED',
      events: ['retry pricing RETRY', 'retry pricing RETRY', 'retry pricing ERROR'],
      elapsedMs: 400,
    },
  },

  'named-configs': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withContext(AppModule, async (app) => {
        const registry = registryOf(app);
        const reports = registry.retry('reports').config;
        const payments = registry.circuitBreaker('payments').config;
        return {
          inventory: registry.retry('inventory').config.maxAttempts,
          reports: [reports.maxAttempts, reports.waitDuration, reports.exponentialMaxWaitDuration],
          payments: [payments.slidingWindowSize, payments.minimumNumberOfCalls, payments.failureRateThreshold],
        };
      });
    },
    answer: { inventory: 4, reports: [3, 2000, 30_000], payments: [20, 10, 30] },
  },

  'spring-file-strict': {
    kind: 'module',
    run: (load) =>
      inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
        const { AppModule } = await load();
        return withContext(AppModule, async (app) => ({
          strict: registryOf(app).options.strict,
          slidingWindowSize: registryOf(app).circuitBreaker('payments').config.slidingWindowSize,
        }));
      }),
    answer: { strict: true, slidingWindowSize: 10 },
  },

  'option-sections': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withHttp(AppModule, async (url) => (await json(`${url}/nothing`)).status);
    },
    answer: 404,
  },

  'fault-injection-module': {
    kind: 'module',
    run: (load) =>
      withEnv({ GAME_DAY: '1' }, async () => {
        const { AppModule } = await load();
        Logger.overrideLogger(false);
        return withContext(AppModule, async (app) => app.get(FaultInjector).active());
      }),
    answer: [
      {
        name: 'inventory',
        error: { rate: 0.2, error: 'ECONNREFUSED' },
        latency: { rate: 0.1, duration: 3000 },
      },
    ],
  },

  'idempotency-quick-start': {
    kind: 'module',
    run: (load) =>
      withEnv({ DATABASE_URL: postgresUrl() }, async () => {
        const { AppModule } = await load();
        return withHttp(
          AppModule,
          async (url) => {
            const send = () =>
              json(`${url}/payments`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'idempotency-key': key },
                body: JSON.stringify({ account: 'acc-1', pence: 1250 }),
              });
            const key = randomUUID();
            return [await send(), await send()];
          },
          // What the application's authentication does: it tells who is asking.
          (app) =>
            app.use((req: { user?: { id: string } }, _res: unknown, next: () => void) => {
              req.user = { id: 'customer-1' };
              next();
            }),
        );
      }),
    answer: [
      { status: 201, body: { id: 'pay_1', pence: 1250 } },
      { status: 201, body: { id: 'pay_1', pence: 1250 } },
    ],
  },

  'reconciler-module': {
    kind: 'module',
    run: (load) =>
      withEnv({ DATABASE_URL: postgresUrl() }, async () => {
        const { PaymentsModule } = await load();
        return withContext(PaymentsModule, async (app) => app.get(IdempotencyRegistry).store.constructor.name);
      }),
    answer: 'PostgresIdempotencyStore',
  },

  'idempotency-virtual-time': {
    kind: 'module',
    run: async (load) => {
      const { appWithVirtualTime } = (await load()) as {
        appWithVirtualTime: () => Promise<INestApplicationContext>;
      };
      const moduleRef = await appWithVirtualTime();
      try {
        return registryOf(moduleRef).clock.now() - Date.UTC(2025, 0, 1);
      } finally {
        await moduleRef.close();
      }
    },
    answer: 30_000,
  },

  'migrating-spring-file': {
    kind: 'module',
    run: (load) =>
      inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
        const { AppModule } = await load();
        return withContext(AppModule, async (app) => registryOf(app).retry('payments').config.waitDuration);
      }),
    answer: 200,
  },

  'migrating-dashboards': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withHttp(AppModule, async (url, app) => {
        registryOf(app).circuitBreaker('orders');
        const response = await fetch(`${url}/metrics`);
        const text = await response.text();
        return { status: response.status, labelled: text.includes('application="order-service"') };
      });
    },
    answer: { status: 200, labelled: true },
  },

  'migrating-worked-example': {
    kind: 'module',
    run: (load) =>
      inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
        const { OrdersModule } = await load();
        return withContext(OrdersModule, async (app) => ({
          order: registryOf(app).options.order,
          maxAttempts: registryOf(app).retry('payments').config.maxAttempts,
        }));
      }),
    answer: {
      order: ['idempotent', 'fallback', 'circuitBreaker', 'retry', 'rateLimiter', 'timeLimiter', 'bulkhead'],
      maxAttempts: 3,
    },
  },

  'metrics-module': {
    kind: 'module',
    run: async (load) => {
      const { AppModule, registry } = (await load()) as {
        AppModule: unknown;
        registry: { metrics(): Promise<string> };
      };
      return withContext(AppModule, async () =>
        (await registry.metrics()).includes('resilience4j_circuitbreaker_state{name="payments",state="closed"} 1'),
      );
    },
    answer: true,
  },

  'metrics-without-nest': {
    kind: 'process',
    run: async (start) => {
      const program = start({});
      const code = await program.exited;
      return {
        code,
        counted: program
          .output()
          .includes('resilience4j_retry_calls_total{name="inventory",kind="successful_without_retry"} 1'),
      };
    },
    answer: { code: 0, counted: true },
  },

  'metrics-endpoint': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withHttp(AppModule, async (url) => {
        const response = await fetch(`${url}/ops/metrics`);
        await response.text();
        return { status: response.status, type: response.headers.get('content-type')?.split(';')[0] };
      });
    },
    answer: { status: 200, type: 'text/plain' },
  },

  'health-module': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withHttp(AppModule, async (url) => {
        const { status, body } = await json(`${url}/health`);
        return { status, checks: Object.keys((body as { info: object }).info) };
      });
    },
    answer: { status: 200, checks: ['circuitBreakers', 'fallbacks'] },
  },

  'status-endpoints': {
    kind: 'module',
    run: (load) =>
      withEnv({ OPERATOR_TOKEN: 'operator-secret' }, async () => {
        const { AppModule } = await load();
        const { result, calls } = await countingTimingSafeEqual(() =>
          withHttp(AppModule, async (url) => {
            const update = (token: string) =>
              fetch(`${url}/actuator/circuitbreakers/nope`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'x-operator-token': token },
                body: JSON.stringify({ updateState: 'FORCE_OPEN' }),
              }).then((r) => r.status);
            const read = (headers: Record<string, string>) =>
              fetch(`${url}/actuator`, { headers }).then((r) => r.status);
            return {
              readWithoutToken: await read({}),
              // Tokens of another length are refused, not a 500: the guard compares digests of equal length.
              readWithShorterToken: await read({ 'x-operator-token': 'operator' }),
              readWithLongerToken: await read({ 'x-operator-token': 'operator-secret-and-more' }),
              read: await read({ 'x-operator-token': 'operator-secret' }),
              withoutToken: await update('wrong'),
              withToken: await update('operator-secret'),
            };
          }),
        );
        // Every token given was judged by timingSafeEqual, none by ===: once per read, and once per guard of a
        // writable route until one refuses (its routes carry the status guards and then the writable ones).
        return { ...result, comparedInConstantTime: calls };
      }),
    answer: {
      readWithoutToken: 403,
      readWithShorterToken: 403,
      readWithLongerToken: 403,
      read: 200,
      withoutToken: 403,
      withToken: 404,
      comparedInConstantTime: 6,
    },
  },

  'outbox-module': {
    kind: 'module',
    run: (load) =>
      withEnv({ DATABASE_URL: postgresUrl(), REDIS_PORT: new URL(redisUrl()).port }, async () => {
        const { AppModule } = await load();
        return withContext(AppModule, async (app) => app.get(Outbox).constructor.name);
      }),
    answer: 'Outbox',
  },

  'load-shedding-module': {
    kind: 'module',
    run: async (load) => {
      const { AppModule } = await load();
      return withHttp(AppModule, async (url) => (await json(`${url}/nothing`)).status);
    },
    answer: 404,
  },

  'rate-limiter-module': {
    kind: 'module',
    run: async (load) => {
      const { AppModule, PartnerClient } = await load();
      return withContext(AppModule, async (app) => {
        const client = app.get(PartnerClient as Type<{ quote(sku: string): Promise<unknown> }>);
        const quote = await client.quote('sku-1');
        return { quote, left: registryOf(app).rateLimiter('partnerApi').metrics.availablePermissions };
      });
    },
    answer: { quote: { sku: 'sku-1', price: 42 }, left: 99 },
  },

  'rate-limiter-drain-options': {
    kind: 'module',
    run: async (load) => {
      const { options } = (await load()) as { options: ResilienceModuleOptions };
      const limiter = new ResilienceRegistry(options).rateLimiter('partnerApi');
      await limiter.execute(async () => 'ok');
      const afterSuccess = limiter.metrics.availablePermissions;
      await limiter.execute(() => Promise.reject(Object.assign(new Error('too many'), { status: 429 }))).catch(() => 0);
      return { afterSuccess, after429: limiter.metrics.availablePermissions };
    },
    answer: { afterSuccess: 99, after429: 0 },
  },

  'shared-limit-module': {
    kind: 'module',
    run: (load) =>
      withEnv({ REDIS_URL: redisUrl() }, async () => {
        const { SharedLimitModule } = await load();
        return withContext(SharedLimitModule, async (app) =>
          registryOf(app).rateLimiter('partnerApi').acquirePermission(),
        );
      }),
    answer: true,
  },

  'testing-jest': {
    kind: 'module',
    run: async (load) => {
      const { pricingBreakerOpens } = (await load()) as { pricingBreakerOpens: () => Promise<string[]> };
      return pricingBreakerOpens();
    },
    answer: [
      'circuitBreaker pricing ERROR',
      'circuitBreaker pricing ERROR',
      'circuitBreaker pricing FAILURE_RATE_EXCEEDED',
      'circuitBreaker pricing STATE_TRANSITION CLOSED_TO_OPEN',
      'circuitBreaker pricing NOT_PERMITTED',
    ],
  },

  'tracing-console': tracedApplication('bootstrap'),

  'tracing-in-memory': {
    kind: 'module',
    run: async (load) => {
      const { registerTracing, resilienceEvents } = (await load()) as {
        registerTracing: () => void;
        resilienceEvents: (name: string) => string[];
      };
      registerTracing();
      try {
        Logger.overrideLogger(false);
        const root = ResilienceModule.forRoot({
          metrics: false,
          retry: { instances: { stock: { maxAttempts: 2, waitDuration: 0 } } },
        });
        return await withContext(root, async (app) => {
          const retry = registryOf(app).retry('stock');
          let calls = 0;
          await trace.getTracer('docs').startActiveSpan('reserve', async (span) => {
            await retry.execute(async () => {
              if (++calls === 1) throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
            });
            span.end();
          });
          return resilienceEvents('reserve');
        });
      } finally {
        resetOpenTelemetry();
      }
    },
    answer: ['resilience.retry', 'resilience.attempt'],
  },

  'deadline-propagator': {
    kind: 'module',
    run: async (load) => {
      try {
        await load();
        return propagation.fields();
      } finally {
        resetOpenTelemetry();
      }
    },
    answer: ['traceparent', 'tracestate', 'x-request-deadline-ms'],
  },

  'fastify-bootstrap': {
    kind: 'module',
    run: async (load) => {
      Logger.overrideLogger(false);
      const { bootstrap } = (await load()) as { bootstrap: (port: number) => Promise<INestApplication> };
      return closing(await bootstrap(0), async (url) => (await json(`${url}/nothing`)).status);
    },
    answer: 404,
  },

  'graphql-extensions': {
    kind: 'module',
    run: async (load) => {
      const { resilienceExtensions } = (await load()) as { resilienceExtensions: (original: unknown) => unknown };
      const breaker = new ResilienceRegistry().circuitBreaker('payments');
      breaker.transitionToForcedOpenState();
      const refused = await breaker.execute(async () => 'charged').catch((error: unknown) => error);
      return { refused: resilienceExtensions(refused), other: resilienceExtensions(new Error('boom')) ?? null };
    },
    answer: { refused: { code: 'CALL_NOT_PERMITTED', retryAfterMs: 1000 }, other: null },
  },

  'bundled-module': {
    kind: 'module',
    run: async (load) => {
      const { BundledAppModule } = await load();
      return withContext(BundledAppModule, async (app) => registryOf(app).options.strict);
    },
    answer: false,
  },
};
