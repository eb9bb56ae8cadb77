import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { defer, mergeMap, Observable, of } from 'rxjs';
import { detachedFromCaller } from '../../kernel/cancellation';
import { contextStorage } from '../../kernel/context';
import {
  IdempotencyKeyInProgressError,
  IdempotencyKeyMissingError,
  IdempotencyStoreUnavailableError,
  ResilienceError,
} from '../../kernel/errors';
import { PROBLEM_CONTENT_TYPE, resilienceProblem } from '../../kernel/resilience-problems';
import { ResilienceMetadataAccessor } from '../../decorators/metadata';
import {
  NEST_HEADERS_METADATA,
  NEST_HTTP_CODE_METADATA,
  NEST_RESPONSE_PASSTHROUGH_METADATA,
  NEST_ROUTE_ARGS_METADATA,
  NestRouteParamtype,
} from './nest-route-metadata';
import { StoredHttpResponse } from './idempotency-store';
import { fingerprintOf, parseIdempotencyKey, scopedKey } from './idempotency-key';
import {
  BODY_NOT_PARSED,
  CORRUPT_RECORD,
  CYCLIC_FINGERPRINT,
  KEY_HEADER_INVALID,
  KEY_HEADER_MISSING,
  PRINCIPAL_MISSING,
  TRANSACTION_NOT_COMMITTED,
} from './idempotency.messages';
import { IDEMPOTENT_BODY_OMITTED_HEADER, IDEMPOTENT_REPLAYED_HEADER, storeName } from './idempotency.options';
import { IdempotencyRegistry } from './idempotency.registry';
import { matchedRoute } from './matched-route';
import { CapturedAnswer, HeldResponse, SubstituteAnswer, writeAnswer } from './held-response';
import { IdempotentMethod } from './idempotent-method';
import { claimKey, IdempotentRun } from './idempotent-run';
import { IdempotencyOutcome } from './idempotent-target';
import type { PlatformRequest } from './platform-request';

/** One request to a protected route, as the interceptor handles it. */
interface Exchange {
  readonly request: HttpRequest;
  /** The Node response. */
  readonly response: ServerResponse;
  /** The platform's response (Express's, or Fastify's reply). */
  readonly reply: unknown;
  /** The route writes its own answer (`@Res()` without passthrough). */
  readonly handled: boolean;
  readonly path: string;
  readonly context: ExecutionContext;
}

/** A header `@Header()` set on a route. */
interface RouteHeader {
  readonly name: string;
  readonly value: string | (() => string);
}

/** Methods the header applies to: the ones that are not idempotent by themselves (IETF draft). */
const PROTECTED_METHODS = new Set(['POST', 'PATCH']);

/** Headers the pipeline may have set for its own answer, dropped before a replay or a problem goes out. */
const ANSWER_HEADERS = [
  'content-length',
  'content-type',
  'etag',
  'location',
  'last-modified',
  'set-cookie',
  'transfer-encoding',
];

/** Express's request (a Node `IncomingMessage`), or Fastify's, whose Node message is `raw`. */
type HttpRequest = IncomingMessage & PlatformRequest & { originalUrl?: string; raw?: IncomingMessage };

/**
 * The HTTP side of `@Idempotent`, which attaches it to each decorated
 * method: reads and checks the key header on POST and PATCH, claims the
 * scoped key, and either replays the stored answer, refuses (400, 409,
 * 422 as `application/problem+json`), or runs the handler and stores the
 * answer its pipeline serialized before the client gets it. Requests with
 * other methods, and non-HTTP calls, pass through.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly accessor = new ResilienceMetadataAccessor();
  private readonly writesItself = new WeakMap<IdempotentMethod, boolean>();

  /**
   * @param registry - the application's idempotency settings, store and method layers
   * @param adapterHost - the HTTP platform, which writes the answer of a route whose client left
   */
  constructor(
    private readonly registry: IdempotencyRegistry,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Protects a POST or PATCH request to an `@Idempotent` route; passes anything else through. */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const info = this.accessor.trampoline(context.getHandler());
    // Without a layer the explorer skipped the method (request-scoped): its resilience decorators are not applied.
    const method = info === undefined ? undefined : this.registry.methodOf(info);
    if (method === undefined || !method.settings.route) return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequest>();
    if (!PROTECTED_METHODS.has(request.method ?? '')) return next.handle();
    const reply = http.getResponse<ServerResponse & { raw?: ServerResponse }>();
    const response = reply.raw ?? reply;
    const handled = this.handledByRoute(method, context);
    const { header, headerLabel } = this.registry.options;
    const path = requestPath(request);
    // Node's own lines: Fastify's `headers` join a repeated header into one value, which would pass as one key.
    const parsed = parseIdempotencyKey(
      (request.raw ?? request).headersDistinct?.[header] ?? headerValues(request.headers[header]),
    );
    if (parsed.kind === 'absent' && !method.settings.required) {
      this.registry.emit('bypassed', method, 'http');
      return next.handle();
    }
    if (parsed.kind !== 'valid') {
      const detail =
        parsed.kind === 'absent'
          ? KEY_HEADER_MISSING(headerLabel, request.method ?? 'POST', path)
          : KEY_HEADER_INVALID(headerLabel, parsed.reason);
      return this.answer(
        response,
        handled,
        problem(new IdempotencyKeyMissingError(method.name, detail), path),
        method,
        'missing_key',
        undefined,
      );
    }
    const exchange: Exchange = { request, response, reply, handled, path, context };
    return defer(() => this.start(method, parsed.key, exchange, next)).pipe(mergeMap((answer) => answer));
  }

  /**
   * True when the route answers through `@Res()` or `@Next()` without
   * passthrough: Nest then writes nothing after it, so an answer given
   * instead of the handler must be written here.
   */
  private handledByRoute(method: IdempotentMethod, context: ExecutionContext): boolean {
    let handled = this.writesItself.get(method);
    if (handled === undefined) {
      const host = context.getClass();
      const name = context.getHandler().name;
      const params = (Reflect.getMetadata(NEST_ROUTE_ARGS_METADATA, host, name) ?? {}) as Record<string, unknown>;
      const ownsResponse = Object.keys(params).some((key) => {
        const type = Number(key.split(':')[0]);
        return type === NestRouteParamtype.RESPONSE || type === NestRouteParamtype.NEXT;
      });
      handled = ownsResponse && Reflect.getMetadata(NEST_RESPONSE_PASSTHROUGH_METADATA, host, name) !== true;
      this.writesItself.set(method, handled);
    }
    return handled;
  }

  private async start(
    method: IdempotentMethod,
    key: string,
    exchange: Exchange,
    next: CallHandler,
  ): Promise<Observable<unknown>> {
    const { request, response, handled, path } = exchange;
    const httpMethod = request.method;
    const route = matchedRoute(request, method.name);
    const resolve = method.settings.principal;
    const principal = typeof resolve === 'function' ? resolve(request) : undefined;
    // Without a caller, its key would share one space with every other anonymous caller's: refuse rather than replay.
    if (resolve !== 'shared' && (principal === undefined || principal === null || principal === ''))
      return this.answer(response, handled, principalMissing(method, path), method, 'missing_principal', key);
    // A body that arrives but is not parsed yet would fingerprint as no body: two uploads would look alike.
    if (request.body === undefined && carriesBody(request))
      return this.answer(response, handled, bodyNotParsed(method, request, path), method, 'body_not_parsed', key);
    const storeKey = scopedKey(principal, httpMethod, route.template, key);
    const fingerprint = fingerprintOf(
      [httpMethod, route.template, route.params, queryOf(request), request.body ?? null],
      () => CYCLIC_FINGERPRINT(method.name),
    );
    let run: IdempotentRun;
    try {
      const start = await claimKey(
        method,
        storeKey,
        fingerprint,
        key,
        { transport: 'http', request },
        resolve === 'shared' ? undefined : String(principal),
      );
      if (start.kind === 'replay') {
        if (start.response.kind !== 'http') throw new Error(CORRUPT_RECORD(storeName(this.registry.store), storeKey));
        return this.answer(
          response,
          handled,
          replay(start.response, this.registry.options.replayHeaders),
          method,
          start.outcome,
          key,
        );
      }
      if (start.kind === 'refuse')
        return this.answer(response, handled, problem(start.error, path), method, start.outcome, key);
      run = await IdempotentRun.open(method, storeKey, start.token, start.record, false);
    } catch (error) {
      // Nothing ran: the client may retry with the same key once the store answers again.
      if (error instanceof IdempotencyStoreUnavailableError)
        return this.answer(response, handled, problem(error, path), method, 'store_unavailable', key, error);
      throw error;
    }
    return this.execute(method, run, key, exchange, next);
  }

  /**
   * Answers with `substitute` in place of the handler: once Nest writes its
   * (empty) reply, so every step of the app's pipeline still runs, or at
   * once when the route writes its own answer and Nest writes nothing.
   */
  private answer(
    response: ServerResponse,
    handled: boolean,
    substitute: SubstituteAnswer,
    method: IdempotentMethod,
    outcome: IdempotencyOutcome,
    key: string | undefined,
    error?: unknown,
  ): Observable<unknown> {
    this.registry.emit(outcome, method, 'http', key, error);
    if (handled) writeAnswer(response, substitute);
    else new HeldResponse(response, async () => substitute);
    return of(undefined);
  }

  private execute(
    method: IdempotentMethod,
    run: IdempotentRun,
    key: string,
    exchange: Exchange,
    next: CallHandler,
  ): Observable<unknown> {
    const { response, path } = exchange;
    const held = new HeldResponse(response, (captured) => this.settle(method, run, key, captured, path));
    let handlerDone = false;
    let closed = false;
    // A client that left before any answer was written may never get one (Nest drops an Observable's reply):
    // settle without an answer then, so the lease timer and any transaction do not linger.
    const abandonIfSilent = () => {
      if (closed && handlerDone && !held.finished) setImmediate(() => held.abandon());
    };
    response.once('close', () => {
      closed = true;
      abandonIfSilent();
    });
    return new Observable((subscriber) => {
      // Set when Nest gives up on a client that left: the work goes on, and its answer settles the key.
      let detached = false;
      let last: unknown;
      const scope = detachedFromCaller();
      const subscribe = () =>
        next.handle().subscribe({
          next: (value) => {
            last = value;
            subscriber.next(value);
          },
          error: (error: unknown) => {
            run.fail(error);
            handlerDone = true;
            scope?.dispose();
            abandonIfSilent();
            subscriber.error(error);
          },
          complete: () => {
            handlerDone = true;
            scope?.dispose();
            if (detached) this.replyToGoneClient(exchange, last);
            abandonIfSilent();
            subscriber.complete();
          },
        });
      const subscription = run.enter(() => (scope === undefined ? subscribe() : contextStorage.run(scope, subscribe)));
      return () => {
        // An @Idempotent request is not cancelled by its client leaving: the retry with the same key gets its answer.
        if (!handlerDone && (closed || response.destroyed)) {
          detached = true;
          return;
        }
        subscription.unsubscribe();
        handlerDone = true;
        scope?.dispose();
        abandonIfSilent();
      };
    });
  }

  /**
   * Writes `value` as Nest answers a route by default (its `@HttpCode`,
   * `@Header`s and the platform's serialization), for the held response to
   * capture: Nest writes nothing once the client has left.
   */
  private replyToGoneClient(exchange: Exchange, value: unknown): void {
    const handler = exchange.context.getHandler();
    const adapter = this.adapterHost.httpAdapter;
    const headers = (Reflect.getMetadata(NEST_HEADERS_METADATA, handler) ?? []) as RouteHeader[];
    for (const { name, value: header } of headers)
      adapter.setHeader(exchange.reply, name, typeof header === 'function' ? header() : header);
    const status = Reflect.getMetadata(NEST_HTTP_CODE_METADATA, handler) as number | undefined;
    adapter.reply(exchange.reply, value, status ?? (exchange.request.method === 'POST' ? 201 : 200));
  }

  private async settle(
    method: IdempotentMethod,
    run: IdempotentRun,
    key: string,
    captured: CapturedAnswer | undefined,
    path: string,
  ): Promise<SubstituteAnswer | undefined> {
    const decision = run.settlementForAnswer(captured?.status);
    const { replayHeaders, maxStoredBytes } = this.registry.options;
    const stored =
      decision === 'store' && captured !== undefined
        ? storedAnswer(captured, replayHeaders, maxStoredBytes)
        : undefined;
    const settled = await run.finish(decision, stored);
    switch (settled.status) {
      case 'completed':
        this.registry.emit('executed', method, 'http', key);
        return undefined;
      case 'released':
        this.registry.emit('released', method, 'http', key, run.error);
        return undefined;
      case 'rolled_back':
        // The transaction's writes are gone, so the answer the handler wrote would describe an effect that did not happen.
        if (settled.error instanceof IdempotencyKeyInProgressError) {
          this.registry.emit('in_progress', method, 'http', key, settled.error);
          return problem(settled.error, path);
        }
        this.registry.emit('released', method, 'http', key, settled.error);
        return notCommitted(method.name, path);
      default:
        this.registry.emit(
          'kept_unknown',
          method,
          'http',
          key,
          settled.status === 'kept' ? (settled.error ?? run.error) : undefined,
        );
        return undefined;
    }
  }
}

/**
 * The stored form of a captured answer: allow-listed headers and the body
 * exactly as sent, as text when it is UTF-8 and in base64 otherwise, so
 * every store (all of them keep JSON text) gives the same bytes back. A
 * streamed body, or one over `maxStoredBytes`, is not kept: the record says
 * why, and so does its replay.
 */
function storedAnswer(
  captured: CapturedAnswer,
  replayHeaders: readonly string[],
  maxStoredBytes: number,
): StoredHttpResponse {
  const headers: Record<string, string> = {};
  for (const name of replayHeaders) {
    const value = headerText(captured.headers, name);
    if (value !== undefined) headers[name] = value;
  }
  const { status, body } = captured;
  if (captured.streamed) return { kind: 'http', status, headers, body: '', omitted: 'streamed' };
  if (body.length > maxStoredBytes) return { kind: 'http', status, headers, body: '', omitted: 'too-large' };
  if (isUtf8(body)) return { kind: 'http', status, headers, body: body.toString('utf8') };
  return { kind: 'http', status, headers, body: body.toString('base64'), encoding: 'base64' };
}

function replay(stored: StoredHttpResponse, replayHeaders: readonly string[]): SubstituteAnswer {
  const drop = [...ANSWER_HEADERS, ...replayHeaders];
  if (stored.omitted !== undefined) {
    // No body follows, so no content type either: the header says why the body is missing.
    const { 'content-type': _type, ...headers } = stored.headers;
    return {
      status: stored.status,
      headers: { ...headers, [IDEMPOTENT_REPLAYED_HEADER]: 'true', [IDEMPOTENT_BODY_OMITTED_HEADER]: stored.omitted },
      body: '',
      drop,
    };
  }
  return {
    status: stored.status,
    headers: { ...stored.headers, [IDEMPOTENT_REPLAYED_HEADER]: 'true' },
    body: stored.encoding === 'base64' ? Buffer.from(stored.body, 'base64') : stored.body,
    drop,
  };
}

function problem(error: ResilienceError, path: string): SubstituteAnswer {
  const answer = resilienceProblem(error, path);
  return { status: answer.status, headers: answer.headers, body: JSON.stringify(answer.body), drop: ANSWER_HEADERS };
}

/** Whether the request says a body follows (a length above 0, or a chunked body). */
function carriesBody(request: HttpRequest): boolean {
  const { headers } = request.raw ?? request;
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function bodyNotParsed(method: IdempotentMethod, request: HttpRequest, path: string): SubstituteAnswer {
  const contentType = (request.raw ?? request).headers['content-type'] ?? 'no content type';
  return problemAnswer(
    'idempotency-body-not-parsed',
    'Request body cannot be fingerprinted',
    415,
    BODY_NOT_PARSED(method.name, contentType.split(';')[0].trim()),
    path,
  );
}

function principalMissing(method: IdempotentMethod, path: string): SubstituteAnswer {
  return problemAnswer(
    'idempotency-principal-missing',
    'Caller not identified',
    401,
    PRINCIPAL_MISSING(method.settings.principalSource ?? "option 'principal'"),
    path,
  );
}

/** A problem+json answer of this module's `type` (a path under its problem base), sent instead of the handler's. */
function problemAnswer(type: string, title: string, status: number, detail: string, path: string): SubstituteAnswer {
  const body = { type: `https://resilience4nest.dev/problems/${type}`, title, status, detail, instance: path };
  return {
    status,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE },
    body: JSON.stringify(body),
    drop: ANSWER_HEADERS,
  };
}

function notCommitted(name: string, path: string): SubstituteAnswer {
  const body = {
    type: 'about:blank',
    title: 'Internal Server Error',
    status: 500,
    detail: TRANSACTION_NOT_COMMITTED(name),
    instance: path,
    name,
  };
  return {
    status: 500,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE },
    body: JSON.stringify(body),
    drop: ANSWER_HEADERS,
  };
}

function headerText(headers: OutgoingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

function headerValues(value: string | string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [value];
}

/** The request path without its query string, as the client sent it. */
function requestPath(request: HttpRequest): string {
  const url = request.originalUrl ?? request.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The raw query string (part of the fingerprint: the same key with other query parameters is another request). */
function queryOf(request: HttpRequest): string {
  const url = request.originalUrl ?? request.url ?? '';
  const query = url.indexOf('?');
  return query === -1 ? '' : url.slice(query + 1);
}
