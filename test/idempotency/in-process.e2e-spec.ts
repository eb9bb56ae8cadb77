import {
  CallHandler,
  Controller,
  ExecutionContext,
  HttpException,
  Injectable,
  NestInterceptor,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import { defer, from, Observable, switchMap } from 'rxjs';
import {
  Idempotent,
  idempotencyTransaction,
  MemoryIdempotencyStore,
  PostgresPoolClient,
  PostgresQueryable,
  StoredResponse,
} from '../../lib';
import { PLATFORMS } from '../support/platforms';
import { RunningApp, send, startApp } from './http-kit';

/** A store whose transactions are a log: the key completes when the transaction commits. */
class LoggingTransactionalStore extends MemoryIdempotencyStore {
  readonly log: string[] = [];
  private pending: (() => Promise<boolean>) | undefined;

  async connect(): Promise<PostgresPoolClient> {
    return {
      query: async (text: string) => {
        this.log.push(text);
        if (text === 'COMMIT') await this.pending?.();
        this.pending = undefined;
        return { rows: [], rowCount: 0 };
      },
      release: () => void this.log.push('release'),
    };
  }

  async completeInTransaction(
    _client: PostgresQueryable,
    key: string,
    token: string,
    response: StoredResponse,
    ttlMs?: number,
  ): Promise<boolean> {
    this.log.push('completeInTransaction');
    this.pending = () => this.complete(key, token, response, ttlMs);
    return true;
  }
}

/** A keyed service method that routes call before their own handler runs. */
@Injectable()
class Audit {
  readonly runs: string[] = [];

  @Idempotent({ key: (id: string) => id })
  async record(id: string): Promise<string> {
    this.runs.push(id);
    return `recorded ${id}`;
  }

  @Idempotent({ key: (id: string) => id })
  stream(id: string): Observable<string> {
    return defer(async () => {
      this.runs.push(`stream ${id}`);
      return `streamed ${id}`;
    });
  }
}

/** Calls both keyed audit methods inside the route's idempotency scope, before the handler is entered. */
@Injectable()
class AuditFirst implements NestInterceptor {
  constructor(private readonly audit: Audit) {}

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return from(this.audit.record('a-1')).pipe(
      switchMap(() => this.audit.stream('a-1')),
      switchMap(() => next.handle()),
    );
  }
}

@Controller()
class TransfersController {
  runs = 0;

  @Post('transfers')
  @Idempotent({ transactional: true })
  async transfer(): Promise<never> {
    this.runs++;
    await idempotencyTransaction().query('INSERT');
    throw new HttpException({ message: 'insufficient funds' }, 402);
  }

  @Post('audited')
  @UseInterceptors(AuditFirst)
  @Idempotent()
  audited() {
    return { run: ++this.runs };
  }
}

describe.each(PLATFORMS)('@Idempotent over HTTP, in process, on %s', (platform) => {
  let running: RunningApp;
  let store: LoggingTransactionalStore;
  let controller: TransfersController;

  beforeEach(async () => {
    store = new LoggingTransactionalStore();
    running = await startApp(
      { idempotency: { store, principal: 'shared' } },
      { controllers: [TransfersController], providers: [Audit, AuditFirst] },
      { platform },
    );
    controller = running.app.get(TransfersController);
  });
  afterEach(async () => {
    await running.close();
    store.close();
  });

  it('stores the 4xx a transactional method threw, with its writes rolled back, and replays it', async () => {
    const transfer = () => send(running.url, '/transfers', { key: 'k-transfer', body: {} });
    expect((await transfer()).status).toBe(402);
    expect(store.log).toEqual(['BEGIN', 'INSERT', 'ROLLBACK', 'release']);
    const again = await transfer();
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(controller.runs).toBe(1);
  });

  it('runs keyed methods called before the handler under their own keys', async () => {
    expect((await send(running.url, '/audited', { key: 'k-1', body: {} })).status).toBe(201);
    expect((await send(running.url, '/audited', { key: 'k-2', body: {} })).status).toBe(201);
    const audit = running.app.get(Audit);
    expect(audit.runs).toEqual(['a-1', 'stream a-1']);
    expect(controller.runs).toBe(2);
    expect(running.outcomes.map((o) => `${o.name}:${o.outcome}`)).toEqual([
      'Audit.record:executed',
      'Audit.stream:executed',
      'TransfersController.audited:executed',
      'Audit.record:replayed',
      'Audit.stream:replayed',
      'TransfersController.audited:executed',
    ]);
  });
});
