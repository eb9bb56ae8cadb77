import { createServer, get, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { CapturedAnswer, HeldResponse, SettleAnswer, SubstituteAnswer } from './held-response';
import { ODD_HEADER_LIST } from './idempotency.messages';

/** What a client of 127.0.0.1 received. */
interface Received {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly body: string;
}

const servers: Server[] = [];

afterEach(async () => {
  const open = servers.splice(0);
  for (const server of open) server.closeAllConnections();
  await Promise.all(open.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

/** Serves one request with `handler` and returns what the client got. */
async function exchange(handler: (response: ServerResponse, request: IncomingMessage) => void): Promise<Received> {
  const server = createServer((request, response) => handler(response, request));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return new Promise<Received>((resolve, reject) => {
    // No keep-alive agent: the connection ends with the test.
    get({ host: '127.0.0.1', port, path: '/', agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('error', reject);
      answer.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(answer.headers)) headers.set(name, String(value));
        resolve({
          status: answer.statusCode ?? 0,
          statusText: answer.statusMessage ?? '',
          headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    }).on('error', reject);
  });
}

/** A settle that records what it was given and answers `substitute` once the test opens it. */
function recordingSettle(
  substitute?: SubstituteAnswer,
): SettleAnswer & { readonly seen: (CapturedAnswer | undefined)[] } {
  const seen: (CapturedAnswer | undefined)[] = [];
  const settle = async (captured: CapturedAnswer | undefined): Promise<SubstituteAnswer | undefined> => {
    seen.push(captured);
    return substitute;
  };
  return Object.assign(settle, { seen });
}

const REPLAY: SubstituteAnswer = {
  status: 200,
  headers: { 'X-Replayed': 'true' },
  body: 'réplayed',
  drop: ['x-drop'],
};

describe('HeldResponse', () => {
  it('sends nothing until settle decides, then the answer the pipeline wrote', async () => {
    let release!: () => void;
    const decided = new Promise<void>((resolve) => (release = resolve));
    let sentBeforeDecision: boolean | undefined;
    let captured: CapturedAnswer | undefined;
    const received = await exchange((response) => {
      new HeldResponse(response, async (answer) => {
        captured = answer;
        sentBeforeDecision = response.headersSent;
        await decided;
        return undefined;
      });
      response.setHeader('x-set', 'before');
      response.writeHead(201, 'Made', { 'x-head': '2', 'x-none': undefined });
      response.end('{"ok":true}');
      setImmediate(release);
    });

    expect(sentBeforeDecision).toBe(false);
    expect(captured).toEqual({
      status: 201,
      headers: expect.objectContaining({ 'x-set': 'before', 'x-head': '2' }),
      body: Buffer.from('{"ok":true}'),
      streamed: false,
    });
    expect(captured?.headers).not.toHaveProperty('x-none');
    expect(received).toMatchObject({ status: 201, statusText: 'Made', body: '{"ok":true}' });
    expect(received.headers.get('x-set')).toBe('before');
    expect(received.headers.get('x-head')).toBe('2');
    expect(received.headers.has('x-none')).toBe(false);
  });

  it('writes the substitute instead: named headers dropped, its own set, the length counted in bytes', async () => {
    const settle = recordingSettle(REPLAY);
    const received = await exchange((response) => {
      new HeldResponse(response, settle);
      response.setHeader('x-drop', 'gone');
      response.setHeader('x-keep', 'kept');
      response.statusCode = 500;
      response.end('pipeline answer');
    });

    expect(settle.seen).toEqual([expect.objectContaining({ status: 500, body: Buffer.from('pipeline answer') })]);
    expect(received).toMatchObject({ status: 200, body: 'réplayed' });
    expect(received.headers.get('x-replayed')).toBe('true');
    expect(received.headers.get('x-keep')).toBe('kept');
    expect(received.headers.has('x-drop')).toBe(false);
    expect(received.headers.get('content-length')).toBe(String(Buffer.byteLength('réplayed')));
  });

  it("counts the substitute's length when the pipeline's is dropped, and sends none with an empty 204", async () => {
    const counted = await exchange((response) => {
      new HeldResponse(response, recordingSettle({ ...REPLAY, drop: ['content-length'] }));
      response.setHeader('content-length', Buffer.byteLength('pipeline answer'));
      response.end('pipeline answer');
    });
    const noContent = await exchange((response) => {
      new HeldResponse(response, recordingSettle({ status: 204, headers: {}, body: '', drop: ['content-length'] }));
      response.setHeader('content-length', 2);
      response.end('{}');
    });

    expect(counted.body).toBe('réplayed');
    expect(counted.headers.get('content-length')).toBe(String(Buffer.byteLength('réplayed')));
    expect(noContent.status).toBe(204);
    // RFC 9110 §8.6: no Content-Length in a 204 answer.
    expect(noContent.headers.has('content-length')).toBe(false);
  });

  it('applies writeHead headers given as a flat array, as pairs, or with no reason phrase', async () => {
    const flatSettle = recordingSettle();
    const flat = await exchange((response) => {
      new HeldResponse(response, flatSettle);
      response.writeHead(202, ['x-list', 'a', 'x-list', 'b']);
      response.end();
    });
    expect(flatSettle.seen[0]?.headers).toEqual({ 'x-list': ['a', 'b'] });
    expect(flat.status).toBe(202);
    expect(flat.headers.get('x-list')).toBe('a, b');

    const paired = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      response.writeHead(203, [
        ['x-pair', 'c'],
        ['x-pair', 'd'],
      ] as unknown as string[]);
      response.end();
    });
    expect(paired.status).toBe(203);
    expect(paired.headers.get('x-pair')).toBe('c, d');

    const object = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      response.writeHead(200, { 'x-object': 'e' });
      response.end();
    });
    expect(object.headers.get('x-object')).toBe('e');
    expect(object.statusText).toBe('OK');
  });

  it('takes writeHead with a status alone, or with a reason and null headers, as Node does', async () => {
    const bare = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      response.setHeader('x-set', 'kept');
      response.writeHead(201);
      response.end('made');
    });
    const nullHeaders = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      response.writeHead(202, 'Taken', null as unknown as undefined);
      response.end();
    });

    expect(bare).toMatchObject({ status: 201, statusText: 'Created', body: 'made' });
    expect(bare.headers.get('x-set')).toBe('kept');
    expect(nullHeaders).toMatchObject({ status: 202, statusText: 'Taken' });
  });

  it('refuses a flat writeHead header list with a name left without its value, as Node does', async () => {
    let refused: unknown;
    const received = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      try {
        response.writeHead(200, ['x-a', '1', 'x-dangling']);
      } catch (error) {
        refused = error;
      }
      response.statusCode = 500;
      response.end();
    });

    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as Error).message).toBe(ODD_HEADER_LIST(3));
    expect(received.status).toBe(500);
    expect(received.headers.has('x-a')).toBe(false);
  });

  it('captures the body of end() as bytes: a Buffer, text in its encoding, or nothing', async () => {
    const settle = recordingSettle();
    const callbacks: string[] = [];
    await exchange((response) => {
      new HeldResponse(response, settle);
      response.end(Buffer.from([1, 2, 3]));
    });
    const base64 = await exchange((response) => {
      new HeldResponse(response, settle);
      response.end('aGk=', 'base64', () => callbacks.push('text'));
    });
    const empty = await exchange((response) => {
      new HeldResponse(response, settle);
      response.end(() => callbacks.push('bare'));
    });
    const utf8 = await exchange((response) => {
      new HeldResponse(response, settle);
      response.end('naïve', () => callbacks.push('utf8'));
    });
    const none = await exchange((response) => {
      new HeldResponse(response, settle);
      response.end(null);
    });

    expect(settle.seen.map((answer) => answer?.body)).toEqual([
      Buffer.from([1, 2, 3]),
      Buffer.from('hi'),
      Buffer.alloc(0),
      Buffer.from('naïve', 'utf8'),
      Buffer.alloc(0),
    ]);
    expect(base64.body).toBe('hi');
    expect(empty.body).toBe('');
    expect(utf8.body).toBe('naïve');
    expect(none.body).toBe('');
    expect(callbacks.sort()).toEqual(['bare', 'text', 'utf8']);
  });

  it('settles a streamed answer on its first part, holding the parts until then', async () => {
    const settle = recordingSettle();
    const refused: boolean[] = [];
    const received = await exchange((response) => {
      new HeldResponse(response, settle);
      response.writeHead(200, { 'content-type': 'text/plain' });
      refused.push(response.write('a'));
      refused.push(response.write('b'));
      // A writer that honours backpressure resumes on 'drain'.
      response.once('drain', () => {
        response.write('c');
        response.end('d');
      });
    });

    expect(refused).toEqual([false, false]);
    expect(settle.seen).toEqual([
      {
        status: 200,
        headers: expect.objectContaining({ 'content-type': 'text/plain' }),
        body: Buffer.alloc(0),
        streamed: true,
      },
    ]);
    expect(received).toMatchObject({ status: 200, body: 'abcd' });
  });

  it('leaves the drain to the socket when a held part filled its buffer', async () => {
    const big = 'x'.repeat(4 * 1024 * 1024);
    const needDrainAtDrain: boolean[] = [];
    const received = await exchange((response) => {
      new HeldResponse(response, recordingSettle());
      response.write(big);
      response.once('drain', () => {
        needDrainAtDrain.push(response.writableNeedDrain);
        response.end();
      });
    });

    expect(needDrainAtDrain).toEqual([false]);
    expect(received.body).toHaveLength(big.length);
  });

  it('lets a streamed answer that ended while settle decided go out whole', async () => {
    const settle = recordingSettle();
    const callbacks: string[] = [];
    const received = await exchange((response) => {
      new HeldResponse(response, settle);
      response.write('first ', () => callbacks.push('write'));
      response.end('last', () => callbacks.push('end'));
    });

    expect(settle.seen).toHaveLength(1);
    expect(received.body).toBe('first last');
    expect(callbacks).toContain('write');
  });

  it('replaces a streamed answer by the substitute and lets the rest of the stream go nowhere', async () => {
    const callbacks: string[] = [];
    let drained = false;
    const received = await exchange((response) => {
      new HeldResponse(response, recordingSettle(REPLAY));
      response.setHeader('x-drop', 'gone');
      response.write('held part', () => callbacks.push('held write'));
      response.once('drain', () => {
        drained = true;
        expect(response.write('late part', () => callbacks.push('late write'))).toBe(true);
        expect(response.end('late end', () => callbacks.push('late end'))).toBe(response);
      });
    });
    await new Promise((resolve) => setImmediate(resolve));

    expect(received).toMatchObject({ status: 200, body: 'réplayed' });
    expect(received.headers.has('x-drop')).toBe(false);
    expect(drained).toBe(true);
    expect(callbacks.sort()).toEqual(['held write', 'late end', 'late write']);
  });

  it('swallows the queued end of a replaced stream, calling its callback', async () => {
    const callbacks: string[] = [];
    const received = await exchange((response) => {
      new HeldResponse(response, recordingSettle(REPLAY));
      response.write('part');
      response.end('end', () => callbacks.push('queued end'));
    });
    await new Promise((resolve) => setImmediate(resolve));

    expect(received.body).toBe('réplayed');
    expect(callbacks).toEqual(['queued end']);
  });

  it("sends the pipeline's answer when settle fails, whole or streamed", async () => {
    const failing: SettleAnswer = () => Promise.reject(new Error('settle broke'));
    const whole = await exchange((response) => {
      new HeldResponse(response, failing);
      response.statusCode = 202;
      response.end('whole');
    });
    const streamed = await exchange((response) => {
      new HeldResponse(response, failing);
      response.write('str');
      response.end('eamed');
    });

    expect(whole).toMatchObject({ status: 202, body: 'whole' });
    expect(streamed).toMatchObject({ status: 200, body: 'streamed' });
  });

  it('tells settle there is no answer when abandoned, once, and then gets out of the way', async () => {
    const settle = recordingSettle(REPLAY);
    const finished: boolean[] = [];
    const received = await exchange((response) => {
      const held = new HeldResponse(response, settle);
      finished.push(held.finished);
      held.abandon();
      finished.push(held.finished);
      held.abandon();
      // The hooks are gone: what the pipeline writes now goes straight out.
      response.statusCode = 204;
      response.end();
    });

    expect(finished).toEqual([false, true]);
    // toStrictEqual: toEqual would let a second undefined through.
    expect(settle.seen).toStrictEqual([undefined]);
    expect(received.status).toBe(204);
  });

  it('removes its hooks before the answer goes out, restoring own properties it found', async () => {
    const own: string[] = [];
    let after: { hooks: string[]; end: unknown } | undefined;
    let wrapper: unknown;
    await exchange((response) => {
      const end = response.end;
      wrapper = function (this: ServerResponse, ...args: unknown[]) {
        own.push('own end');
        return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
      };
      Object.defineProperty(response, 'end', { value: wrapper, writable: true, configurable: true });
      new HeldResponse(response, async () => {
        after = {
          hooks: ['write', 'writeHead'].filter((name) => Object.prototype.hasOwnProperty.call(response, name)),
          end: response.end,
        };
        return undefined;
      });
      response.end('done');
    });

    expect(after).toEqual({ hooks: [], end: wrapper });
    expect(own).toEqual(['own end']);
  });
});
