import { Controller, Post, Res } from '@nestjs/common';
import { VirtualClock } from '../../lib/kernel/clock';
import { Idempotent } from '../../lib';
import { serverOrSkip } from '../support/server-env';
import { PLATFORMS } from '../support/platforms';
import { RunningApp, startApp } from './http-kit';
import { memoryTarget, postgresTarget, redisTarget } from './store-targets';

/** Every byte value, twice: invalid UTF-8 in many places (lone continuation bytes, 0xC0, 0xFF…), and NUL. */
const BINARY = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
/** "café au lait" in ISO-8859-1: 0xE9 alone is not UTF-8. */
const LATIN1 = Buffer.from('café au lait', 'latin1');

/** What the handlers use of the response: Express's and Fastify's alike (Fastify's `status` is its `code`). */
interface Reply {
  status(code: number): { type(type: string): { send(body: Buffer): unknown } };
}

@Controller()
class DownloadsController {
  runs = 0;

  @Post('binary')
  @Idempotent()
  binary(@Res() res: Reply): void {
    this.runs++;
    res.status(201).type('application/octet-stream').send(BINARY);
  }

  @Post('latin1')
  @Idempotent()
  latin1(@Res() res: Reply): void {
    this.runs++;
    res.status(201).type('text/plain; charset=iso-8859-1').send(LATIN1);
  }
}

async function post(
  base: string,
  path: string,
  key: string,
): Promise<{ status: number; replayed: string | null; bytes: Buffer }> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'idempotency-key': key } });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

const targets = [memoryTarget(), postgresTarget('bytes'), redisTarget('bytes')];

describe.each(
  PLATFORMS.flatMap((platform) =>
    targets.map((target) => ({ platform, target, name: `${target.name} on ${platform}` })),
  ),
)('@Idempotent replays bodies byte for byte: $name', ({ platform, target }) => {
  const url = target.server === undefined ? '' : serverOrSkip(target.server);
  if (url === undefined) return;

  let running: RunningApp;
  let controller: DownloadsController;

  beforeAll(() => target.setup(url));
  afterAll(() => target.teardown());
  beforeEach(async () => {
    const clock = new VirtualClock(Date.UTC(2025, 0, 1));
    running = await startApp(
      { clock, idempotency: { store: target.create(clock), principal: 'shared' } },
      { controllers: [DownloadsController] },
      { platform },
    );
    controller = running.app.get(DownloadsController);
  });
  afterEach(() => running.close());

  it.each([
    ['a binary body with every byte value', '/binary', BINARY],
    ['an ISO-8859-1 text body', '/latin1', LATIN1],
  ])('replays %s byte-identical', async (_, path, sent) => {
    const first = await post(running.url, path, 'k-bytes');
    const again = await post(running.url, path, 'k-bytes');
    expect(first.status).toBe(201);
    expect(first.bytes.equals(sent)).toBe(true);
    expect(again).toMatchObject({ status: 201, replayed: 'true' });
    expect(again.bytes.toString('hex')).toBe(sent.toString('hex'));
    expect(controller.runs).toBe(1);
  });
});
