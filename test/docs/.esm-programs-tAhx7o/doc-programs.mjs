import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { context, propagation, trace } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FaultInjector, IdempotencyRegistry, Outbox, ResilienceModule, ResilienceRegistry, ResilienceTracing, } from 'resilience4nest';
/** The environment of the test servers the Jest global setup started (PostgreSQL and Redis). */
const postgresUrl = () => required('RESILIENCE_TEST_POSTGRES_URL');
const redisUrl = () => required('RESILIENCE_TEST_REDIS_URL');
function required(variable) {
    const value = process.env[variable];
    if (!value)
        throw new Error(`${variable} is not set: the Jest global setup starts the test servers`);
    return value;
}
/** A stand-in for the pricing service the README's examples call, on a free loopback port. */
async function pricingService() {
    const deadlines = [];
    const server = createServer((req, res) => {
        deadlines.push(String(req.headers['x-request-deadline-ms'] ?? ''));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ sku: req.url?.split('/').pop(), price: 1250 }));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${server.address().port}`;
    return { url, deadlines, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
/** Runs `body` with `env` set, then puts the environment back. */
async function withEnv(env, body) {
    const before = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
    Object.assign(process.env, env);
    try {
        return await body();
    }
    finally {
        for (const [key, value] of Object.entries(before))
            if (value === undefined)
                delete process.env[key];
            else
                process.env[key] = value;
    }
}
/** Runs `body` in a fresh directory holding `files` (path → content), as a process started there. */
async function inDirectory(files, body) {
    const dir = mkdtempSync(join(tmpdir(), 'resilience4nest-doc-'));
    const cwd = process.cwd();
    try {
        for (const [path, content] of Object.entries(files)) {
            mkdirSync(dirname(join(dir, path)), { recursive: true });
            writeFileSync(join(dir, path), content);
        }
        process.chdir(dir);
        return await body();
    }
    finally {
        process.chdir(cwd);
        rmSync(dir, { recursive: true, force: true });
    }
}
/** The application context of `module`, closed after `body`. */
async function withContext(module, body) {
    const app = await NestFactory.createApplicationContext(module, { logger: false });
    try {
        return await body(app);
    }
    finally {
        await app.close();
    }
}
/** The HTTP application of `module` on a free loopback port, closed after `body`. */
async function withHttp(module, body, prepare = () => undefined) {
    const app = await NestFactory.create(module, { logger: false });
    prepare(app);
    await app.listen(0, '127.0.0.1');
    try {
        return await body(await app.getUrl(), app);
    }
    finally {
        await app.close();
    }
}
/** An application closed after `body`, whatever happens in it. */
async function closing(app, body) {
    try {
        return await body((await app.getUrl()).replace('[::1]', '127.0.0.1'));
    }
    finally {
        await app.close();
    }
}
/** Status and JSON body of a request. */
async function json(url, init) {
    const response = await fetch(url, init);
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}
/** Resets the global OpenTelemetry API, as a block that registered a tracer or a propagator leaves it. */
function resetOpenTelemetry() {
    trace.disable();
    context.disable();
    propagation.disable();
}
/** Polls `url` until the program answers, at most `tries` times 100 ms apart. */
async function firstAnswer(url, tries = 600) {
    for (let i = 0; i < tries; i++) {
        const answer = await json(url).catch(() => undefined);
        if (answer !== undefined)
            return answer;
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`nothing answered at ${url}`);
}
/** A free loopback port. */
function freePort() {
    return new Promise((resolve) => {
        const server = createServer();
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
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
const registryOf = (app) => app.get(ResilienceRegistry);
const QUOTE = { sku: 'sku-1', price: 1250 };
/** Every block marked `run=<id>`, by id. */
export const DOC_PROGRAMS = {
    'quick-start': {
        kind: 'module',
        run: async (load) => {
            const pricing = await pricingService();
            try {
                return await withEnv({ PRICING_URL: pricing.url }, async () => {
                    Logger.overrideLogger(false);
                    const { bootstrap } = (await load());
                    const answer = await closing(await bootstrap(0, '127.0.0.1'), (url) => json(`${url}/quotes/sku-1`));
                    return { ...answer, deadlineSent: Number(pricing.deadlines[0]) > 0 };
                });
            }
            finally {
                await pricing.close();
            }
        },
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
            }
            finally {
                program.kill();
                await pricing.close();
            }
        },
        answer: { status: 200, body: QUOTE },
    },
    'registry-breaker': {
        kind: 'module',
        run: async (load) => {
            const pricing = await pricingService();
            try {
                return await withEnv({ PRICING_URL: pricing.url }, async () => {
                    const { price } = (await load());
                    return price('sku-1');
                });
            }
            finally {
                await pricing.close();
            }
        },
        answer: QUOTE,
    },
    'registry-pipeline': {
        kind: 'module',
        run: async (load) => {
            const pricing = await pricingService();
            try {
                return await withEnv({ PRICING_URL: pricing.url }, async () => {
                    const { price } = (await load());
                    return price('sku-1');
                });
            }
            finally {
                await pricing.close();
            }
        },
        answer: QUOTE,
    },
    'config-recipe': {
        kind: 'module',
        run: (load) => inDirectory({ 'application.yml': APPLICATION_YML }, async () => {
            const { AppModule } = await load();
            return withContext(AppModule, async (app) => {
                const { slidingWindowSize, waitDurationInOpenState } = registryOf(app).circuitBreaker('payments').config;
                return { slidingWindowSize, waitDurationInOpenState, maxAttempts: registryOf(app).retry('payments').config.maxAttempts };
            });
        }),
        answer: { slidingWindowSize: 10, waitDurationInOpenState: 10_000, maxAttempts: 3 },
    },
    'traced-bootstrap': {
        kind: 'module',
        run: async (load) => {
            const pricing = await pricingService();
            try {
                return await withEnv({ PRICING_URL: pricing.url }, async () => {
                    Logger.overrideLogger(false);
                    const { tracedBootstrap } = (await load());
                    const app = await tracedBootstrap(0, '127.0.0.1');
                    const tracing = app.get(ResilienceTracing).active;
                    return { ...(await closing(app, (url) => json(`${url}/quotes/sku-1`))), tracing };
                });
            }
            finally {
                resetOpenTelemetry();
                await pricing.close();
            }
        },
        answer: { status: 200, body: QUOTE, tracing: true },
    },
    'testing-your-code': {
        kind: 'module',
        run: async (load) => {
            const { quoteWhilePricingIsDown } = (await load());
            const { error, events, elapsedMs } = await quoteWhilePricingIsDown();
            return { code: error.code, events, elapsedMs };
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
        run: (load) => inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
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
        run: (load) => withEnv({ GAME_DAY: '1' }, async () => {
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
        run: (load) => withEnv({ DATABASE_URL: postgresUrl() }, async () => {
            const { AppModule } = await load();
            return withHttp(AppModule, async (url) => {
                const send = () => json(`${url}/payments`, {
                    method: 'POST',
                    headers: { 'content-type': 'application/json', 'idempotency-key': key },
                    body: JSON.stringify({ account: 'acc-1', pence: 1250 }),
                });
                const key = randomUUID();
                return [await send(), await send()];
            }, 
            // What the application's authentication does: it tells who is asking.
            (app) => app.use((req, _res, next) => {
                req.user = { id: 'customer-1' };
                next();
            }));
        }),
        answer: [
            { status: 201, body: { id: 'pay_1', pence: 1250 } },
            { status: 201, body: { id: 'pay_1', pence: 1250 } },
        ],
    },
    'reconciler-module': {
        kind: 'module',
        run: (load) => withEnv({ DATABASE_URL: postgresUrl() }, async () => {
            const { PaymentsModule } = await load();
            return withContext(PaymentsModule, async (app) => app.get(IdempotencyRegistry).store.constructor.name);
        }),
        answer: 'PostgresIdempotencyStore',
    },
    'idempotency-virtual-time': {
        kind: 'module',
        run: async (load) => {
            const { appWithVirtualTime } = (await load());
            const moduleRef = await appWithVirtualTime();
            try {
                return registryOf(moduleRef).clock.now() - Date.UTC(2025, 0, 1);
            }
            finally {
                await moduleRef.close();
            }
        },
        answer: 30_000,
    },
    'migrating-spring-file': {
        kind: 'module',
        run: (load) => inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
            const { AppModule } = await load();
            return withContext(AppModule, async (app) => registryOf(app).retry('payments').config.waitDuration);
        }),
        answer: 200,
    },
    'migrating-dashboards': {
        kind: 'module',
        run: async (load) => {
            const { AppModule } = await load();
            return withHttp(AppModule, async (url) => {
                const response = await fetch(`${url}/metrics`);
                const text = await response.text();
                return { status: response.status, labelled: text.includes('application="order-service"') };
            });
        },
        answer: { status: 200, labelled: true },
    },
    'migrating-worked-example': {
        kind: 'module',
        run: (load) => inDirectory({ 'config/application.yml': APPLICATION_YML }, async () => {
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
            const { AppModule, registry } = (await load());
            return withContext(AppModule, async () => (await registry.metrics()).includes('resilience4j_circuitbreaker_state{state="closed",name="payments"} 1'));
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
                return { status, checks: Object.keys(body.info) };
            });
        },
        answer: { status: 200, checks: ['circuitBreakers', 'fallbacks'] },
    },
    'status-endpoints': {
        kind: 'module',
        run: (load) => withEnv({ OPERATOR_TOKEN: 'operator-secret' }, async () => {
            const { AppModule } = await load();
            return withHttp(AppModule, async (url) => {
                const update = (token) => fetch(`${url}/actuator/circuitbreakers/nope`, {
                    method: 'POST',
                    headers: { 'content-type': 'application/json', 'x-operator-token': token },
                    body: JSON.stringify({ updateState: 'FORCE_OPEN' }),
                }).then((r) => r.status);
                return {
                    read: (await json(`${url}/actuator`)).status,
                    withoutToken: await update('wrong'),
                    withToken: await update('operator-secret'),
                };
            });
        }),
        answer: { read: 200, withoutToken: 403, withToken: 404 },
    },
    'outbox-module': {
        kind: 'module',
        run: (load) => withEnv({ DATABASE_URL: postgresUrl(), REDIS_PORT: new URL(redisUrl()).port }, async () => {
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
                const client = app.get(PartnerClient);
                const quote = await client.quote('sku-1');
                return { quote, left: registryOf(app).rateLimiter('partnerApi').metrics.availablePermissions };
            });
        },
        answer: { quote: { sku: 'sku-1', price: 42 }, left: 99 },
    },
    'rate-limiter-drain-options': {
        kind: 'module',
        run: async (load) => {
            const { options } = (await load());
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
        run: (load) => withEnv({ REDIS_URL: redisUrl() }, async () => {
            const { SharedLimitModule } = await load();
            return withContext(SharedLimitModule, async (app) => registryOf(app).rateLimiter('partnerApi').acquirePermission());
        }),
        answer: true,
    },
    'testing-jest': {
        kind: 'module',
        run: async (load) => {
            const { pricingBreakerOpens } = (await load());
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
    'tracing-console': {
        kind: 'module',
        run: async (load) => {
            const pricing = await pricingService();
            try {
                return await withEnv({ PRICING_URL: pricing.url }, async () => {
                    Logger.overrideLogger(false);
                    const { bootstrap } = (await load());
                    const app = await bootstrap(0, '127.0.0.1');
                    const tracing = app.get(ResilienceTracing).active;
                    return { ...(await closing(app, (url) => json(`${url}/quotes/sku-1`))), tracing };
                });
            }
            finally {
                resetOpenTelemetry();
                await pricing.close();
            }
        },
        answer: { status: 200, body: QUOTE, tracing: true },
    },
    'tracing-in-memory': {
        kind: 'module',
        run: async (load) => {
            const { registerTracing, resilienceEvents } = (await load());
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
                            if (++calls === 1)
                                throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
                        });
                        span.end();
                    });
                    return resilienceEvents('reserve');
                });
            }
            finally {
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
            }
            finally {
                resetOpenTelemetry();
            }
        },
        answer: ['traceparent', 'tracestate', 'x-request-deadline-ms'],
    },
    'fastify-bootstrap': {
        kind: 'module',
        run: async (load) => {
            Logger.overrideLogger(false);
            const { bootstrap } = (await load());
            return closing(await bootstrap(0), async (url) => (await json(`${url}/nothing`)).status);
        },
        answer: 404,
    },
    'graphql-extensions': {
        kind: 'module',
        run: async (load) => {
            const { resilienceExtensions } = (await load());
            const breaker = new ResilienceRegistry().circuitBreaker('payments');
            breaker.transitionToForcedOpenState();
            const refused = await breaker.execute(async () => 'charged').catch((error) => error);
            return { refused: resilienceExtensions(refused), other: resilienceExtensions(new Error('boom')) ?? null };
        },
        answer: { refused: { code: 'CALL_NOT_PERMITTED' }, other: null },
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
