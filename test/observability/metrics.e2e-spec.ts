import { INestApplication } from '@nestjs/common';
import { Registry } from 'prom-client';
import request from 'supertest';
import { ResilienceEndpointsModule } from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { bootApp, driveTraffic, parseScrape, Sample, valueOf } from './kit';

describe.each(PLATFORMS)('/metrics after traffic through every policy (%s)', (platform) => {
  let app: INestApplication;
  let samples: Sample[];
  let contentType: string;
  const registry = new Registry();

  beforeAll(async () => {
    const booted = await bootApp(
      { metrics: { registry } },
      { imports: [ResilienceEndpointsModule.forRoot({ metrics: true })] },
      platform,
    );
    app = booted.app;
    await driveTraffic(booted.clock, booted.shop);
    const response = await request(app.getHttpServer()).get('/metrics').expect(200);
    contentType = response.headers['content-type'];
    samples = parseScrape(response.text);
  });

  afterAll(() => app.close());

  const value = (name: string, labels: Record<string, string>): number => valueOf(samples, name, labels);

  it('is served in the Prometheus text format', () => {
    // Express re-serializes the parameters when it adds the charset; their order does not matter to Prometheus.
    expect(contentType.split(/;\s*/).sort()).toEqual(['charset=utf-8', 'text/plain', 'version=0.0.4']);
  });

  it('shows the open breaker: one series per state, 1 for OPEN', () => {
    for (const state of ['closed', 'half_open', 'disabled', 'forced_open', 'metrics_only']) {
      expect(value('resilience4j_circuitbreaker_state', { name: 'psp', state })).toBe(0);
    }
    expect(value('resilience4j_circuitbreaker_state', { name: 'psp', state: 'open' })).toBe(1);
  });

  it('times the recorded calls by outcome, in seconds', () => {
    const calls = 'resilience4j_circuitbreaker_calls_seconds';
    expect(value(`${calls}_count`, { name: 'psp', kind: 'successful' })).toBe(1);
    expect(value(`${calls}_sum`, { name: 'psp', kind: 'successful' })).toBeCloseTo(0.02);
    expect(value(`${calls}_bucket`, { name: 'psp', kind: 'successful', le: '0.01' })).toBe(0);
    expect(value(`${calls}_bucket`, { name: 'psp', kind: 'successful', le: '0.025' })).toBe(1);
    expect(value(`${calls}_bucket`, { name: 'psp', kind: 'successful', le: '+Inf' })).toBe(1);
    expect(value(`${calls}_count`, { name: 'psp', kind: 'failed' })).toBe(1);
    expect(value(`${calls}_sum`, { name: 'psp', kind: 'failed' })).toBeCloseTo(0.03);
    expect(value(`${calls}_bucket`, { name: 'psp', kind: 'failed', le: '0.025' })).toBe(0);
    expect(value(`${calls}_bucket`, { name: 'psp', kind: 'failed', le: '0.05' })).toBe(1);
    expect(value(`${calls}_count`, { name: 'psp', kind: 'ignored' })).toBe(0);
  });

  it('counts the refused call and shows the window the breaker opened with', () => {
    expect(value('resilience4j_circuitbreaker_not_permitted_calls_total', { name: 'psp', kind: 'not_permitted' })).toBe(
      1,
    );
    expect(value('resilience4j_circuitbreaker_failure_rate', { name: 'psp' })).toBe(50);
    expect(value('resilience4j_circuitbreaker_slow_call_rate', { name: 'psp' })).toBe(0);
    expect(value('resilience4j_circuitbreaker_buffered_calls', { name: 'psp', kind: 'successful' })).toBe(1);
    expect(value('resilience4j_circuitbreaker_buffered_calls', { name: 'psp', kind: 'failed' })).toBe(1);
    expect(value('resilience4j_circuitbreaker_slow_calls', { name: 'psp', kind: 'successful' })).toBe(0);
    expect(value('resilience4j_circuitbreaker_slow_calls', { name: 'psp', kind: 'failed' })).toBe(0);
  });

  it('counts the fallback by the error class it handled', () => {
    expect(value('resilience4nest_fallback_calls_total', { name: 'Shop.quote', kind: 'CallNotPermittedError' })).toBe(
      1,
    );
    expect(value('resilience4nest_fallback_guarded_calls_total', { name: 'Shop.quote' })).toBe(1);
  });

  it('counts the retried failure and the budget denial', () => {
    const retry = 'resilience4j_retry_calls_total';
    expect(value(retry, { name: 'inventory', kind: 'failed_with_retry' })).toBe(1);
    expect(value(retry, { name: 'inventory', kind: 'failed_without_retry' })).toBe(0);
    expect(value(retry, { name: 'inventory', kind: 'successful_with_retry' })).toBe(0);
    expect(value(retry, { name: 'inventory', kind: 'successful_without_retry' })).toBe(0);
    expect(value('resilience4nest_retry_budget_denied_total', { name: 'inventory' })).toBe(1);
  });

  it('counts the bulkhead rejection and shows its permits free again', () => {
    expect(value('resilience4nest_bulkhead_rejected_total', { name: 'pool' })).toBe(1);
    expect(value('resilience4j_bulkhead_available_concurrent_calls', { name: 'pool' })).toBe(1);
    expect(value('resilience4j_bulkhead_max_allowed_concurrent_calls', { name: 'pool' })).toBe(1);
    expect(value('resilience4nest_bulkhead_queue_depth', { name: 'pool' })).toBe(0);
  });

  it('counts the timeout', () => {
    expect(value('resilience4j_timelimiter_calls_total', { name: 'slow', kind: 'timeout' })).toBe(1);
    expect(value('resilience4j_timelimiter_calls_total', { name: 'slow', kind: 'successful' })).toBe(0);
    expect(value('resilience4j_timelimiter_calls_total', { name: 'slow', kind: 'failed' })).toBe(0);
  });

  it('counts idempotency outcomes by outcome only', () => {
    expect(value('resilience4nest_idempotency_requests_total', { outcome: 'executed' })).toBe(1);
    expect(value('resilience4nest_idempotency_requests_total', { outcome: 'replayed' })).toBe(1);
  });

  it('labels series with instance names only', () => {
    const labelNames = new Set(
      samples.filter((s) => s.name.startsWith('resilience4')).flatMap((s) => Object.keys(s.labels)),
    );
    expect([...labelNames].sort()).toEqual(['kind', 'le', 'name', 'outcome', 'result', 'state']);
    const names = new Set(samples.filter((s) => 'name' in s.labels).map((s) => s.labels.name));
    expect([...names].sort()).toEqual(['Shop.quote', 'inventory', 'pool', 'psp', 'rates', 'slow']);
  });
});
