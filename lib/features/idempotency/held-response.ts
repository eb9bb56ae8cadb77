import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ODD_HEADER_LIST } from './idempotency.messages';

/** What the pipeline wrote for a request: status, headers and body bytes, as the client would get them. */
export interface CapturedAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  /** The whole body; empty for a streamed answer. */
  readonly body: Buffer;
  /** True when the body was written in parts (a stream, a `StreamableFile`): it flows to the client unheld and is not kept. */
  readonly streamed: boolean;
}

/** An answer written instead of the pipeline's (a replay or a problem). */
export interface SubstituteAnswer {
  readonly status: number;
  /** Headers to set; names in any case. */
  readonly headers: Readonly<Record<string, string>>;
  /** Text (written as UTF-8) or bytes. */
  readonly body: string | Buffer;
  /** Header names (lower case) to drop from what the pipeline set before the answer is written. */
  readonly drop: readonly string[];
}

/** Decides, once the pipeline has written its answer (`undefined` if it never will), what goes out instead, if anything. */
export type SettleAnswer = (captured: CapturedAnswer | undefined) => Promise<SubstituteAnswer | undefined>;

// Node's write and end have several overloads; a held call is replayed with the arguments it was given.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Writer = (...args: any[]) => unknown;
type HeldWrite = [chunk: unknown, encoding: unknown, callback: unknown];
const HOOKED = ['write', 'end', 'writeHead'] as const;

/**
 * Holds back one response: `writeHead` and `end` are held instead of
 * sent, so the bytes the client would get are known (serialized by
 * whatever interceptors, filters and adapter the app has) and nothing
 * reaches the client before `settle` has decided (stored the answer, or
 * chosen another). Nothing is sent, so headers stay writable and whatever
 * ran before can still be replaced. An answer written in parts (`write`
 * before `end`: a stream) is never buffered: `settle` decides on its status
 * and headers at the first part, which waits (backpressure) until then, and
 * the rest flows straight to the client. The hooks are own properties of
 * this one response object and are removed before the answer goes out.
 */
export class HeldResponse {
  /** What the pipeline gave `end`, which reaches the hook at most once. */
  private body = Buffer.alloc(0);
  private readonly saved: Array<[string, PropertyDescriptor | undefined]> = [];
  private readonly end: Writer;
  private readonly write: Writer;
  private readonly writeHead: Writer;
  private callback: (() => void) | undefined;
  private done = false;
  /** Parts of a streamed answer written while `settle` decides, and its end if it came. */
  private queued: HeldWrite[] | undefined;
  private queuedEnd: HeldWrite | undefined;
  /** Set when another answer replaced a streamed one: the stream's remaining parts go nowhere. */
  private discarding = false;

  /**
   * @param response - the Node response (Express's `res`, or Fastify's `reply.raw`)
   * @param settle - decides what is sent
   */
  constructor(
    private readonly response: ServerResponse,
    private readonly settle: SettleAnswer,
  ) {
    // The originals are kept to be called later with the response as `this`.
    /* eslint-disable @typescript-eslint/unbound-method */
    this.end = response.end;
    this.write = response.write;
    this.writeHead = response.writeHead;
    /* eslint-enable @typescript-eslint/unbound-method */
    for (const name of HOOKED) this.saved.push([name, Object.getOwnPropertyDescriptor(response, name)]);
    Object.assign(response, {
      writeHead: (status: number, reason?: unknown, headers?: unknown) => {
        // A substitute replacing a stream is written while the hooks stay; Node's end() sends its head through here.
        if (this.discarding) return this.writeHead.call(response, status, reason, headers);
        response.statusCode = status;
        if (typeof reason === 'string') response.statusMessage = reason;
        else headers = reason;
        applyHeaders(response, headers);
        return response;
      },
      write: (chunk: unknown, encoding?: unknown, callback?: unknown) => {
        if (this.discarding) return swallow(encoding, callback);
        if (!this.done) this.releaseStreamed();
        this.queued?.push([chunk, encoding, callback]);
        return false;
      },
      end: (chunk?: unknown, encoding?: unknown, callback?: unknown) => {
        if (this.discarding) {
          swallow(chunk, encoding, callback);
          return response;
        }
        if (this.queued !== undefined) {
          this.queuedEnd = [chunk, encoding, callback];
          return response;
        }
        if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
          // Buffer.from reads text as UTF-8 when the encoding is missing or is the callback.
          this.body =
            typeof chunk === 'string'
              ? Buffer.from(chunk, encoding as BufferEncoding)
              : Buffer.from(chunk as Uint8Array);
        }
        this.callback = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
        this.release(true);
        return response;
      },
    });
  }

  /** True once the pipeline ended the response or began streaming it, or the hold was abandoned. */
  get finished(): boolean {
    return this.done;
  }

  /** Gives up waiting for the pipeline (the client went away); `settle` learns there is no answer. */
  abandon(): void {
    this.release(false);
  }

  private release(ended: boolean): void {
    if (this.done) return;
    this.done = true;
    this.restore();
    const captured: CapturedAnswer | undefined = ended
      ? { status: this.response.statusCode, headers: this.response.getHeaders(), body: this.body, streamed: false }
      : undefined;
    this.settle(captured).then(
      (substitute) => this.send(captured, substitute),
      // settle handles its own failures; should it still throw, the client gets what the pipeline wrote.
      () => this.send(captured, undefined),
    );
  }

  /** The first part of a streamed answer: settle on its status and headers, holding the parts until then. */
  private releaseStreamed(): void {
    this.done = true;
    const queued: HeldWrite[] = [];
    this.queued = queued;
    const captured: CapturedAnswer = {
      status: this.response.statusCode,
      headers: this.response.getHeaders(),
      body: Buffer.alloc(0),
      streamed: true,
    };
    this.settle(captured).then(
      (substitute) => this.flow(substitute, queued),
      () => this.flow(undefined, queued),
    );
  }

  /** Lets a streamed answer go: its held parts, then the rest straight through (or nowhere, if `substitute` replaces it). */
  private flow(substitute: SubstituteAnswer | undefined, queued: HeldWrite[]): void {
    const response = this.response;
    const queuedEnd = this.queuedEnd;
    this.queued = undefined;
    this.queuedEnd = undefined;
    if (substitute !== undefined && !response.headersSent) {
      this.discarding = true;
      for (const [, encoding, callback] of queued) swallow(encoding, callback);
      if (queuedEnd !== undefined) swallow(...queuedEnd);
      writeAnswer(response, substitute, this.end);
      response.emit('drain');
      return;
    }
    this.restore();
    for (const [chunk, encoding, callback] of queued) this.write.call(response, chunk, encoding, callback);
    if (queuedEnd !== undefined) this.end.call(response, ...queuedEnd);
    // The parts were refused with false while held: a writer waiting for 'drain' resumes now, or when the socket drains.
    else if (!response.writableNeedDrain) response.emit('drain');
  }

  private restore(): void {
    for (const [name, descriptor] of this.saved) {
      if (descriptor === undefined) delete (this.response as unknown as Record<string, unknown>)[name];
      else Object.defineProperty(this.response, name, descriptor);
    }
    this.saved.length = 0;
  }

  private send(captured: CapturedAnswer | undefined, substitute: SubstituteAnswer | undefined): void {
    const response = this.response;
    if (captured === undefined) return;
    if (substitute === undefined || response.headersSent) this.end.call(response, captured.body, this.callback);
    else writeAnswer(response, substitute, this.end, this.callback);
  }
}

/** Calls the write callback among `args`, if any, as a write that went nowhere. */
function swallow(...args: unknown[]): boolean {
  const callback = args.find((a) => typeof a === 'function') as (() => void) | undefined;
  if (callback !== undefined) process.nextTick(callback);
  return true;
}

/**
 * Writes `answer` on `response` through `end` (the response's own by
 * default), in place of whatever the pipeline set for its own answer.
 */
export function writeAnswer(
  response: ServerResponse,
  answer: SubstituteAnswer,
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with the response as `this`
  end: Writer = response.end,
  callback?: () => void,
): void {
  for (const name of answer.drop) response.removeHeader(name);
  response.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value);
  if (answer.body.length > 0) response.setHeader('content-length', Buffer.byteLength(answer.body));
  end.call(response, answer.body, callback);
}

/** `writeHead`'s headers (an object, or a flat or paired array) set on the response. */
function applyHeaders(response: ServerResponse, headers: unknown): void {
  if (headers === undefined || headers === null) return;
  if (!Array.isArray(headers)) {
    for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
      if (value !== undefined) response.setHeader(name, value as string | number | string[]);
    }
    return;
  }
  // Node tells the two array forms apart by the first entry alone.
  if (Array.isArray(headers[0])) {
    for (const [name, value] of headers as [string, string][]) response.appendHeader(name, value);
    return;
  }
  if (headers.length % 2 !== 0) throw new TypeError(ODD_HEADER_LIST(headers.length));
  for (let i = 0; i < headers.length; i += 2) response.appendHeader(String(headers[i]), String(headers[i + 1]));
}
