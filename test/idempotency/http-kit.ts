import { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { request as httpRequest } from 'node:http';
import { AddressInfo } from 'node:net';
import { IdempotencyOutcomeEvent, IdempotencyRegistry, ResilienceModule, ResilienceModuleOptions } from '../../lib';
import { createPlatformApp, Platform } from '../support/platforms';

/** A promise a test resolves when it chooses: holds a handler mid-flight. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;

  constructor() {
    this.promise = new Promise<void>((resolve) => (this.open = resolve));
  }
}

/**
 * Resolves waiters once a condition holds, re-checked whenever the code
 * under test calls `notify()`: a test waits for a request to reach its
 * handler (or a lease to be renewed) without polling or sleeping.
 */
export class Watch {
  private waiters: Array<{ condition: () => boolean; resolve: () => void }> = [];

  /** Re-checks every waiter's condition. */
  notify(): void {
    this.waiters = this.waiters.filter((w) => {
      if (!w.condition()) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves as soon as `condition()` is true. */
  until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ condition, resolve }));
  }
}

/**
 * Base of a handler a test steers: after recording its effect, each call
 * runs {@link ScriptedHandler.proceed}, so the test can wait for the call,
 * hold it at a gate, or make it throw.
 */
export class ScriptedHandler {
  /** Each call takes the next gate, if any, and waits on it after its effect. */
  readonly gates: Gate[] = [];
  /** The next call throws this after its effect (and any gate). */
  failNext: unknown;
  /** Notified after each effect. */
  readonly watch = new Watch();

  /** Notifies {@link ScriptedHandler.watch}, waits on the next gate if any, then throws {@link ScriptedHandler.failNext} once if set. */
  protected async proceed(): Promise<void> {
    this.watch.notify();
    const gate = this.gates.shift();
    if (gate !== undefined) await gate.promise;
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure !== undefined) throw failure;
  }
}

/** What a test sees of one HTTP answer. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** One running app on 127.0.0.1 and the outcomes its idempotency layer reported. */
export interface RunningApp {
  readonly app: INestApplication;
  readonly url: string;
  readonly outcomes: IdempotencyOutcomeEvent[];
  close(): Promise<void>;
}

/** Options of {@link startApp}. */
export interface StartOptions {
  /** The HTTP platform; Express by default. */
  readonly platform?: Platform;
  /** Runs before the routes are mounted (middleware added there sees every request). */
  readonly prepare?: (app: INestApplication) => void;
}

/**
 * Boots `metadata` with `ResilienceModule.forRoot(options)` on the chosen
 * platform and listens on a free loopback port.
 */
export async function startApp(
  options: ResilienceModuleOptions,
  metadata: ModuleMetadata,
  { platform = 'express', prepare }: StartOptions = {},
): Promise<RunningApp> {
  const moduleRef = await Test.createTestingModule({
    ...metadata,
    imports: [ResilienceModule.forRoot(options), ...(metadata.imports ?? [])],
  }).compile();
  const app = createPlatformApp(moduleRef, platform);
  prepare?.(app);
  const outcomes: IdempotencyOutcomeEvent[] = [];
  app.get(IdempotencyRegistry).onOutcome((event) => outcomes.push(event));
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, outcomes, close: () => app.close() };
}

/** Options of {@link send}. */
export interface SendOptions {
  readonly method?: string;
  /** The idempotency key header's value; omitted when undefined. */
  readonly key?: string;
  /** A JSON value, or the raw body text. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/** Sends one request and reads the whole answer. */
export async function send(base: string, path: string, options: SendOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${base}${path}`, { method: options.method ?? 'POST', headers, body });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Sends a JSON POST with one `Idempotency-Key` header line per key (fetch would join them into one line). */
export function sendKeyLines(base: string, path: string, keys: readonly string[], body: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method: 'POST' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.setHeader('content-type', 'application/json');
    req.setHeader('idempotency-key', [...keys]);
    req.end(JSON.stringify(body));
  });
}

/** The answer's body parsed as JSON. */
export function json(answer: Answer): any {
  return JSON.parse(answer.text);
}
