import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** What the pipeline wrote for a request: status, headers and body bytes, as the client would get them. */
export interface CapturedAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: Buffer;
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

type Writer = (...args: any[]) => unknown;
const HOOKED = ['write', 'end', 'writeHead'] as const;

/**
 * Holds back one response: `writeHead`, `write` and `end` are buffered
 * instead of sent, so the bytes the client would get are known (serialized
 * by whatever interceptors, filters and adapter the app has) and nothing
 * reaches the client before `settle` has decided (stored the answer, or
 * chosen another). Nothing is sent, so headers stay writable and whatever
 * ran before can still be replaced. The hooks are own properties of this
 * one response object and are removed before the answer goes out.
 */
export class HeldResponse {
  private readonly chunks: Buffer[] = [];
  private readonly saved: Array<[string, PropertyDescriptor | undefined]> = [];
  private readonly end: Writer;
  private callback: (() => void) | undefined;
  private done = false;

  /**
   * @param response the Node response (Express's `res`, or Fastify's `reply.raw`)
   * @param settle decides what is sent
   */
  constructor(
    private readonly response: ServerResponse,
    private readonly settle: SettleAnswer,
  ) {
    this.end = response.end;
    for (const name of HOOKED) this.saved.push([name, Object.getOwnPropertyDescriptor(response, name)]);
    const hold = (chunk: unknown, encoding: unknown) => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
        this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.from(chunk as Uint8Array));
      }
    };
    Object.assign(response, {
      writeHead: (status: number, reason?: unknown, headers?: unknown) => {
        response.statusCode = status;
        if (typeof reason === 'string') response.statusMessage = reason;
        else headers = reason;
        applyHeaders(response, headers);
        return response;
      },
      write: (chunk: unknown, encoding?: unknown, callback?: unknown) => {
        hold(chunk, encoding);
        const cb = [encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
        if (cb !== undefined) process.nextTick(cb);
        return true;
      },
      end: (chunk?: unknown, encoding?: unknown, callback?: unknown) => {
        hold(chunk, encoding);
        this.callback = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
        this.release(true);
        return response;
      },
    });
  }

  /** True once the pipeline ended the response, or the hold was abandoned. */
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
    for (const [name, descriptor] of this.saved) {
      if (descriptor === undefined) delete (this.response as unknown as Record<string, unknown>)[name];
      else Object.defineProperty(this.response, name, descriptor);
    }
    const captured: CapturedAnswer | undefined = ended
      ? { status: this.response.statusCode, headers: this.response.getHeaders(), body: Buffer.concat(this.chunks) }
      : undefined;
    this.settle(captured).then(
      (substitute) => this.send(captured, substitute),
      // settle handles its own failures; should it still throw, the client gets what the pipeline wrote.
      () => this.send(captured, undefined),
    );
  }

  private send(captured: CapturedAnswer | undefined, substitute: SubstituteAnswer | undefined): void {
    const response = this.response;
    if (captured === undefined) return;
    if (substitute === undefined || response.headersSent) this.end.call(response, captured.body, this.callback);
    else writeAnswer(response, substitute, this.end, this.callback);
  }
}

/**
 * Writes `answer` on `response` through `end` (the response's own by
 * default), in place of whatever the pipeline set for its own answer.
 */
export function writeAnswer(response: ServerResponse, answer: SubstituteAnswer, end: Writer = response.end, callback?: () => void): void {
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
  if (headers.every((entry) => Array.isArray(entry))) {
    for (const [name, value] of headers as [string, string][]) response.appendHeader(name, value);
    return;
  }
  for (let i = 0; i + 1 < headers.length; i += 2) response.appendHeader(String(headers[i]), String(headers[i + 1]));
}
