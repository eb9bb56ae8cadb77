import { Controller, Post, Res, StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { Readable } from 'node:stream';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent, MemoryIdempotencyStore } from '../../lib';
import { scopedKey } from '../../lib/features/idempotency/idempotency-key';
import { PLATFORMS } from '../support/platforms';
import { RunningApp, startApp } from './http-kit';
import { FaultyStore } from './store-targets';

const LEASE = 30_000;
const MIB = 1_048_576;
/** 3 MiB of JSON: three times the default maxStoredBytes. */
const BIG = { items: Array.from({ length: 3 * 1024 }, (_, i) => ({ i, pad: 'x'.repeat(1_024) })) };

/** A stream of `parts` parts of 64 KiB, each byte the part's index. */
function parts(count: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      this.push(sent < count ? Buffer.alloc(64 * 1024, sent++ % 256) : null);
    },
  });
}

@Controller()
class ExportsController {
  runs = 0;
  /** Parts an endless stream has produced so far. */
  produced = 0;

  @Post('big')
  @Idempotent()
  big() {
    this.runs++;
    return BIG;
  }

  @Post('small')
  @Idempotent()
  small() {
    this.runs++;
    return { ok: true };
  }

  @Post('file')
  @Idempotent()
  file(): StreamableFile {
    this.runs++;
    return new StreamableFile(parts(48), { type: 'application/octet-stream' });
  }

  @Post('endless')
  @Idempotent()
  endless(@Res() res: Response): void {
    this.runs++;
    res.status(200).type('application/octet-stream');
    const stream = new Readable({
      read: () => {
        this.produced++;
        stream.push(Buffer.alloc(64 * 1024, 7));
      },
    });
    res.once('close', () => stream.destroy());
    stream.pipe(res);
  }
}

describe.each(PLATFORMS)('@Idempotent with answers too large or streamed to keep, on %s', (platform) => {
  let clock: VirtualClock;
  let store: FaultyStore;
  let running: RunningApp;
  let controller: ExportsController;

  beforeEach(async () => {
    clock = new VirtualClock(Date.UTC(2025, 0, 1));
    store = new FaultyStore(new MemoryIdempotencyStore({ clock }));
    running = await startApp(
      { clock, idempotency: { store: store, lease: LEASE, principal: 'shared' } },
      { controllers: [ExportsController] },
      { platform },
    );
    controller = running.app.get(ExportsController);
  });
  afterEach(() => running.close());

  const post = async (path: string, key: string) => {
    const response = await fetch(`${running.url}${path}`, { method: 'POST', headers: { 'idempotency-key': key } });
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
  };
  const recordOf = (path: string, key: string) => store.get(scopedKey(undefined, 'POST', path, key));

  /** The key is settled: completed, and no lease renewal follows however long the clock runs. */
  const expectSettled = async (path: string, key: string) => {
    expect(await recordOf(path, key)).toMatchObject({ state: 'completed' });
    const renewals = store.renewals;
    await clock.advance(3 * LEASE);
    expect(store.renewals).toBe(renewals);
  };

  it('gives the client a 3 MiB answer whole, settles the key, and replays it without a body, saying so', async () => {
    const first = await post('/big', 'k-big');
    expect(first.status).toBe(201);
    expect(first.bytes.length).toBeGreaterThan(3 * MIB);
    expect(JSON.parse(first.bytes.toString('utf8'))).toEqual(BIG);
    await expectSettled('/big', 'k-big');
    const again = await post('/big', 'k-big');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotent-body-omitted')).toBe('too-large');
    expect(again.headers.get('content-type')).toBeNull();
    expect(again.bytes.length).toBe(0);
    expect(controller.runs).toBe(1);
  });

  it('still stores and replays an answer within maxStoredBytes', async () => {
    const first = await post('/small', 'k-small');
    const again = await post('/small', 'k-small');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.get('idempotent-body-omitted')).toBeNull();
  });

  it('streams a 3 MiB StreamableFile to the client, settles the key, and replays it without a body, saying so', async () => {
    const first = await post('/file', 'k-file');
    expect(first.status).toBe(201);
    expect(first.bytes.length).toBe(48 * 64 * 1024);
    expect(first.bytes[47 * 64 * 1024]).toBe(47);
    await expectSettled('/file', 'k-file');
    const again = await post('/file', 'k-file');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-body-omitted')).toBe('streamed');
    expect(again.bytes.length).toBe(0);
    expect(controller.runs).toBe(1);
  });

  // The route writes through Express's response; the StreamableFile case above covers streams on both platforms.
  if (platform === 'express') {
    it('settles the key of an endless stream at its first part, and streams it with backpressure instead of holding it', async () => {
      const controllerAbort = new AbortController();
      const response = await fetch(`${running.url}/endless`, {
        method: 'POST',
        headers: { 'idempotency-key': 'k-endless' },
        signal: controllerAbort.signal,
      });
      expect(response.status).toBe(200);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let received = 0;
      while (received < 4 * MIB) received += ((await reader.read()).value as Uint8Array).length;
      // The key was completed before the stream ends (it never does).
      expect(await recordOf('/endless', 'k-endless')).toMatchObject({
        state: 'completed',
        response: { omitted: 'streamed' },
      });
      // What was produced but not yet read sits in socket buffers, bounded by backpressure, not in the server's memory.
      expect(controller.produced * 64 * 1024 - received).toBeLessThan(8 * MIB);
      controllerAbort.abort();
      await reader.cancel().catch(() => undefined);
    });
  }
});
