import { INestApplication } from '@nestjs/common';
import { context, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { NextFunction, Request, Response } from 'express';
import request from 'supertest';
import { ResilienceTracing, VirtualClock } from 'resilience4nest';
import { bootSampleApp } from './boot';
import { ClockDriver } from './clock-driver';

/** A span around each HTTP request, as OpenTelemetry's HTTP instrumentation opens one. */
function requestSpans(req: Request, res: Response, next: NextFunction): void {
  trace.getTracer('shop').startActiveSpan(`${req.method} ${req.originalUrl}`, (span: Span) => {
    res.on('finish', () => {
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    next();
  });
}

/**
 * The sample shop traced end to end: an in-memory exporter collects the
 * request spans, and each carries the resilience events of the calls the
 * request made.
 */
describe('sample app traced with OpenTelemetry', () => {
  const exporter = new InMemorySpanExporter();
  let app: INestApplication;
  let clock: VirtualClock;
  let driver: ClockDriver;

  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });

  afterAll(() => {
    trace.disable();
    context.disable();
  });

  beforeEach(async () => {
    exporter.reset();
    ({ app, clock, driver } = await bootSampleApp(['error'], 'express', undefined, (a) => a.use(requestSpans)));
  });

  afterEach(async () => {
    driver.restore();
    await app.close();
  });

  const spanEvents = (name: string) => {
    const span = exporter.getFinishedSpans().find((s) => s.name === name);
    if (span === undefined)
      throw new Error(
        `no span '${name}' among ${exporter
          .getFinishedSpans()
          .map((s) => s.name)
          .join(', ')}`,
      );
    return span.events.map((e) => ({ name: e.name, attributes: e.attributes }));
  };

  it('records on the request span that the rates call was retried and answered by the last known rate', async () => {
    expect(app.get(ResilienceTracing).active).toBe(true);
    await request(app.getHttpServer()).get('/products/sku-3?currency=USD').expect(200);
    // Every dependency answered: a trace with no resilience event.
    expect(spanEvents('GET /products/sku-3?currency=USD')).toEqual([]);
    exporter.reset();
    await request(app.getHttpServer()).post('/admin/dependencies/rates').send({ errorRate: 1 }).expect(201);
    await clock.advance(60_000);
    const stale = await driver.answer(request(app.getHttpServer()).get('/products/sku-3?currency=USD'));
    expect(stale.status).toBe(200);
    const rates = { 'resilience.policy': 'retry', 'resilience.instance': 'rates' };
    const failed = { 'error.type': 'DownstreamHttpError' };
    expect(spanEvents('GET /products/sku-3?currency=USD')).toEqual([
      {
        name: 'resilience.retry',
        attributes: { ...rates, ...failed, 'resilience.attempt.number': 1, 'resilience.retry.wait_ms': 50 },
      },
      { name: 'resilience.attempt', attributes: { ...rates, 'resilience.attempt.number': 2 } },
      {
        name: 'resilience.retry.stopped',
        attributes: {
          ...rates,
          ...failed,
          'resilience.attempt.number': 2,
          'resilience.retry.stop_reason': 'max-attempts',
        },
      },
      {
        name: 'resilience.cache.stale',
        attributes: {
          'resilience.policy': 'cache',
          'resilience.instance': 'rates',
          'resilience.cache.result': 'stale',
          'resilience.cache.age_ms': 60_050,
        },
      },
    ]);
  });
});
