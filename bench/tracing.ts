import { INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ResilienceModule, ResilienceModuleOptions, ResilienceTracing } from '../lib';
import { measure } from './measure';
import { Column, ns, printHeading, printTable, spread, times, verdict } from './report';
import { BenchSection } from './section';
import { BENCH_OPTIONS, BenchService } from './subjects';

/** "No measurable cost": the no-tracer path may differ from tracing off by at most this share, or this many ns. */
const NOISE_SHARE = 0.03;
const NOISE_NS = 25;

const LABELS = {
  off: 'full stack, tracing: false',
  auto: 'full stack, @opentelemetry/api loaded, no tracer registered',
  registered: 'full stack, tracer registered, no active span',
  inSpan: 'full stack, inside an active recording span',
} as const;

/** Boots the bench provider under `ResilienceModule` with the bench options and `tracing`. */
async function boot(tracing: ResilienceModuleOptions['tracing']): Promise<{
  app: INestApplicationContext;
  service: BenchService;
}> {
  @Module({ imports: [ResilienceModule.forRoot({ ...BENCH_OPTIONS, tracing })], providers: [BenchService] })
  class TracingBenchModule {}
  const app = await NestFactory.createApplicationContext(TracingBenchModule, { logger: false });
  return { app, service: app.get(BenchService) };
}

/**
 * The happy-path cost of OpenTelemetry tracing on the full decorated stack:
 * off, on but with no tracer provider registered (the default `auto` then
 * subscribes to nothing), with a provider registered (every policy has a
 * listener), and inside an active recording span.
 */
export const tracing: BenchSection = {
  name: 'tracing',
  summary: 'ns per call of the full stack: tracing off, no tracer registered, tracer registered, inside a span',
  async run() {
    const off = await boot(false);
    // Booted before any provider is registered: `auto` finds none and subscribes to nothing.
    const auto = await boot(undefined);
    if (auto.app.get(ResilienceTracing).active) throw new Error('tracing subscribed although no tracer is registered');
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const provider = new BasicTracerProvider({ spanProcessors: [new NoopSpanProcessor()] });
    trace.setGlobalTracerProvider(provider);
    const registered = await boot(undefined);
    if (!registered.app.get(ResilienceTracing).active)
      throw new Error('tracing is not active with a tracer registered');
    const span = trace.getTracer('bench').startSpan('request');
    const inSpan = trace.setSpan(context.active(), span);
    try {
      const results = await measure([
        { label: LABELS.off, call: () => off.service.fullStack(1), expect: 2 },
        { label: LABELS.auto, call: () => auto.service.fullStack(1), expect: 2 },
        { label: LABELS.registered, call: () => registered.service.fullStack(1), expect: 2 },
        { label: LABELS.inSpan, call: () => context.with(inSpan, () => registered.service.fullStack(1)), expect: 2 },
      ]);
      const get = (label: string) => results.find((r) => r.label === label)!;
      const base = get(LABELS.off);
      const columns: Column[] = [
        { heading: 'path', align: 'left' },
        { heading: 'ns/call' },
        { heading: 'added ns' },
        { heading: 'ratio' },
        { heading: 'spread' },
      ];
      printHeading('OpenTelemetry tracing on the full stack (happy path)');
      printTable(
        columns,
        results.map((m) => [
          m.label,
          ns(m.nsPerCall),
          m === base ? '—' : ns(m.nsPerCall - base.nsPerCall),
          times(m.nsPerCall / base.nsPerCall),
          spread(m.spread),
        ]),
      );
      const added = get(LABELS.auto).nsPerCall - base.nsPerCall;
      console.log('');
      console.log(
        verdict(
          `no tracer registered: within ${NOISE_SHARE * 100}% or ${NOISE_NS} ns of tracing off`,
          `${ns(added)} ns`,
          Math.abs(added) <= Math.max(NOISE_NS, NOISE_SHARE * base.nsPerCall),
        ),
      );
      console.log(
        [
          '',
          'Full stack = @Fallback, @Retry, @CircuitBreaker, @Timeout, @Bulkhead on a trivial async method; sequential awaited calls,',
          `median of interleaved rounds. With a tracer registered every policy has a listener, so the time limiter keeps each call's`,
          'async context for its timeout event; the happy path records no span event. "inside a span" includes context.with().',
        ].join('\n'),
      );
    } finally {
      span.end();
      await Promise.all([off.app.close(), auto.app.close(), registered.app.close()]);
      trace.disable();
      context.disable();
    }
  },
};
