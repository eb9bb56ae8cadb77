import { CallHandler, Controller, ExecutionContext, Injectable, NestInterceptor, Post, Res } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { map, Observable } from 'rxjs';
import { Idempotent } from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { RunningApp, send, startApp } from './http-kit';

/** What the app uses of the response: Express's and Fastify's alike. */
interface Reply {
  header(name: string, value: string): Reply;
  status(code: number): Reply;
  type(contentType: string): Reply;
  send(body: string): unknown;
}

/** An app-wide response envelope and a per-request header, as real apps have. */
@Injectable()
class Envelope implements NestInterceptor {
  private served = 0;

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    context.switchToHttp().getResponse<Reply>().header('x-served', String(++this.served));
    return next.handle().pipe(map((data) => ({ data, version: 2 })));
  }
}

@Controller()
class ReceiptsController {
  runs = 0;

  @Post('receipts')
  @Idempotent()
  async create() {
    return { receipt: ++this.runs, secret: undefined };
  }

  @Post('raw')
  @Idempotent()
  raw(@Res() res: Reply): void {
    res.status(202).type('text/plain').send(`accepted ${++this.runs}`);
  }
}

describe.each(PLATFORMS)('@Idempotent replays what the client saw (%s)', (platform) => {
  let running: RunningApp;

  beforeEach(async () => {
    running = await startApp(
      { idempotency: { principal: () => 'p' } },
      { controllers: [ReceiptsController], providers: [{ provide: APP_INTERCEPTOR, useClass: Envelope }] },
      { platform },
    );
  });
  afterEach(() => running.close());

  it('stores the body after every interceptor, so a replay is not serialized twice', async () => {
    const first = await send(running.url, '/receipts', { key: 'k' });
    const again = await send(running.url, '/receipts', { key: 'k' });
    expect(first.text).toBe('{"data":{"receipt":1},"version":2}');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Headers of the request itself (set by the app on every request) stay; only the allow-listed ones are replayed.
    expect([first.headers.get('x-served'), again.headers.get('x-served')]).toEqual(['1', '2']);
  });

  it('stores what a handler wrote itself through @Res()', async () => {
    const first = await send(running.url, '/raw', { key: 'k' });
    const again = await send(running.url, '/raw', { key: 'k' });
    expect(first).toMatchObject({ status: 202, text: 'accepted 1' });
    expect(again).toMatchObject({ status: 202, text: 'accepted 1' });
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const refused = await send(running.url, '/raw');
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  });
});
