import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Observable, firstValueFrom, of, tap } from 'rxjs';
import { VirtualClock } from '../../kernel/clock';
import { IdempotencyKeyInProgressError, IdempotencyStoreUnavailableError } from '../../kernel/errors';
import { ResilienceModule } from '../../nest/resilience.module';
import { fingerprintOf, scopedKey } from './idempotency-key';
import {
  Idempotent,
  IdempotencyOutcomeEvent,
  IdempotencyReconciler,
  IdempotencyRegistry,
  idempotencyTransaction,
  MemoryIdempotencyStore,
  PostgresPoolClient,
  PostgresQueryable,
  StoredResponse,
} from './index';
import { ClaimOptions, ClaimResult } from './idempotency-store';
import { contextStorage, ResilienceContext } from '../../kernel/context';
import { HttpException } from '@nestjs/common';

const START = Date.UTC(2025, 0, 1);
// Not the default lease, so a claim that dropped its options would show.
const LEASE = 12_000;

/** A store whose transactions are a log: the key completes when the transaction commits. */
class TransactionalMemoryStore extends MemoryIdempotencyStore {
  readonly log: string[] = [];
  /** Statements that throw this error instead of running. */
  readonly failing = new Map<string, Error>();
  connectError: Error | undefined;
  /** What `completeInTransaction` answers: false when another attempt took the key over. */
  owns = true;
  renewals = 0;
  renewError: Error | undefined;
  completeError: Error | undefined;
  claimError: Error | undefined;
  releaseError: Error | undefined;
  /** Renewals wait for this gate before answering. */
  renewGate: Gate | undefined;
  /** Renewals answer that another attempt owns the key. */
  taken = false;
  private pending: (() => Promise<boolean>) | undefined;

  async connect(): Promise<PostgresPoolClient> {
    if (this.connectError !== undefined) throw this.connectError;
    return {
      query: async (text: string) => {
        this.log.push(text);
        const error = this.failing.get(text);
        if (error !== undefined) throw error;
        if (text === 'COMMIT') await this.pending?.();
        this.pending = undefined;
        return { rows: [], rowCount: 0 };
      },
      release: (error?: Error | boolean) => {
        this.log.push(error instanceof Error ? `release(${error.message})` : 'release');
      },
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
    if (!this.owns) return false;
    this.pending = () => this.complete(key, token, response, ttlMs);
    return true;
  }

  override async complete(key: string, token: string, response: StoredResponse, ttlMs?: number): Promise<boolean> {
    if (this.completeError !== undefined) throw this.completeError;
    return super.complete(key, token, response, ttlMs);
  }

  override async claim(key: string, fingerprint: string, options?: ClaimOptions): Promise<ClaimResult> {
    if (this.claimError !== undefined) throw this.claimError;
    return super.claim(key, fingerprint, options);
  }

  override async release(key: string, token: string): Promise<boolean> {
    if (this.releaseError !== undefined) throw this.releaseError;
    return super.release(key, token);
  }

  override async renew(key: string, token: string, leaseMs?: number): Promise<boolean> {
    this.renewals++;
    await this.renewGate?.opened;
    if (this.renewError !== undefined) throw this.renewError;
    if (this.taken) return false;
    return super.renew(key, token, leaseMs);
  }
}

/** Holds a call mid-flight until the test opens it. */
class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
}

@Injectable()
class Ledger {
  readonly runs: string[] = [];
  failNext: unknown;
  gate: Gate | undefined;
  entered: (() => void) | undefined;

  @Idempotent({ key: (id: string) => id, transactional: true })
  async post(id: string): Promise<string> {
    this.runs.push(id);
    await idempotencyTransaction().query('INSERT');
    this.entered?.();
    await this.gate?.opened;
    const error = this.failNext;
    this.failNext = undefined;
    if (error !== undefined) throw error;
    return `posted ${id}`;
  }

  @Idempotent({ key: (id: string) => id })
  plain(id: string): Promise<string> {
    this.runs.push(id);
    this.entered?.();
    const error = this.failNext;
    this.failNext = undefined;
    return (this.gate?.opened ?? Promise.resolve()).then(() => {
      if (error !== undefined) throw error;
      return `done ${id}`;
    });
  }

  @Idempotent({ key: (id: string) => id })
  async nested(id: string, inner?: string): Promise<string> {
    this.runs.push(id);
    if (inner !== undefined) await this.nested(inner);
    return `nested ${id}`;
  }

  @Idempotent({ key: (id: string) => id })
  stream(id: string): Observable<number> {
    return of(1, 2, 3).pipe(tap({ subscribe: () => this.runs.push(id) }));
  }

  @Idempotent({ key: (_id: string) => 'same', fingerprint: (_id: string, body: unknown) => body })
  cyclic(_id: string, body: unknown): Promise<string> {
    return Promise.resolve(String(body));
  }
}

describe('@Idempotent({ key }) calls through the idempotency core', () => {
  let app: INestApplication;
  let clock: VirtualClock;
  let store: TransactionalMemoryStore;
  let ledger: Ledger;
  let outcomes: IdempotencyOutcomeEvent[];
  let reconciler: IdempotencyReconciler | undefined;

  const storeKey = (method: string, key: string): string => scopedKey(undefined, 'CALL', `Ledger.${method}`, key);
  const outcomeNames = (): string[] => outcomes.map((o) => o.outcome);

  beforeEach(async () => {
    clock = new VirtualClock(START);
    store = new TransactionalMemoryStore({ clock });
    reconciler = undefined;
    const moduleRef = await Test.createTestingModule({
      imports: [
        ResilienceModule.forRoot({
          clock,
          idempotency: {
            store: store,
            lease: LEASE,
            reconciler: (stale) => (reconciler === undefined ? { action: 'wait' } : reconciler(stale)),
          },
        }),
      ],
      providers: [Ledger],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    ledger = app.get(Ledger);
    outcomes = [];
    app.get(IdempotencyRegistry).onOutcome((e) => outcomes.push(e));
  });
  afterEach(async () => {
    await app.close();
    store.close();
  });

  describe('an Observable method', () => {
    it('runs under the key and answers its last value, replayed without running again', async () => {
      expect(await firstValueFrom(ledger.stream('s-1'))).toBe(3);
      expect(await firstValueFrom(ledger.stream('s-1'))).toBe(3);
      expect(ledger.runs).toEqual(['s-1']);
      expect(outcomeNames()).toEqual(['executed', 'replayed']);
    });
  });

  describe('a keyed method calling itself', () => {
    it('runs the inner call under its own key too', async () => {
      await expect(ledger.nested('n-outer', 'n-inner')).resolves.toBe('nested n-outer');
      await expect(ledger.nested('n-inner')).resolves.toBe('nested n-inner');
      expect(ledger.runs).toEqual(['n-outer', 'n-inner']);
      expect(outcomeNames()).toEqual(['executed', 'executed', 'replayed']);
    });
  });

  describe('fingerprints', () => {
    it('refuses a payload that refers to itself, naming the method', async () => {
      const body: { self?: unknown } = {};
      body.self = body;
      await expect(ledger.cyclic('c', body)).rejects.toThrow(/Ledger\.cyclic/);
    });
  });

  describe('reconciliation of a stale key', () => {
    async function leaveStale(id: string): Promise<void> {
      ledger.failNext = new Error('outcome unknown');
      await expect(ledger.plain(id)).rejects.toThrow('outcome unknown');
      await clock.advance(LEASE);
    }

    it('keeps the key and passes on the error when the reconciler throws', async () => {
      await leaveStale('r-1');
      const lookupFailed = new Error('ledger lookup failed');
      reconciler = () => {
        throw lookupFailed;
      };
      await expect(ledger.plain('r-1')).rejects.toBe(lookupFailed);
      expect(outcomes.at(-1)).toMatchObject({ outcome: 'kept_unknown', key: 'r-1', error: lookupFailed });
      // The key stays claimed by the failed reconciliation's lease.
      reconciler = () => ({ action: 'run' });
      await expect(ledger.plain('r-1')).rejects.toBeInstanceOf(IdempotencyKeyInProgressError);
      expect(ledger.runs).toEqual(['r-1']);
    });

    it('refuses a verdict it does not know, saying what it got', async () => {
      await leaveStale('r-2');
      reconciler = () => ({ action: 'retry' }) as unknown as ReturnType<IdempotencyReconciler>;
      await expect(ledger.plain('r-2')).rejects.toThrow(
        new TypeError(
          `resilience4nest: the reconciler of @Idempotent on Ledger.plain returned {"action":"retry"}; expected { action: 'run' | 'wait' | 'complete', ... }`,
        ),
      );
    });

    it('refuses the call when a reconciled answer cannot be stored because the key was taken over', async () => {
      await leaveStale('r-3');
      reconciler = async (stale) => {
        // Another attempt takes the key over while the reconciler looks.
        await clock.advance(LEASE);
        const takeover = await store.claim(storeKey('plain', stale.key), fingerprintOf(stale.key, String), {
          leaseMs: LEASE,
        });
        expect(takeover.outcome).toBe('stale');
        return { action: 'complete', value: 'found' };
      };
      await expect(ledger.plain('r-3')).rejects.toMatchObject({
        constructor: IdempotencyKeyInProgressError,
        retryAfterMs: LEASE,
      });
      expect(outcomes.at(-1)?.outcome).toBe('in_progress');
    });
  });

  describe('a store that fails to record the answer', () => {
    it('still returns the result, reports the key kept with the error, and keeps refusing the key', async () => {
      const down = new Error('store down');
      store.completeError = down;
      await expect(ledger.plain('w-1')).resolves.toBe('done w-1');
      expect(outcomes.at(-1)).toMatchObject({ outcome: 'kept_unknown', key: 'w-1' });
      expect(outcomes.at(-1)?.error).toBeInstanceOf(IdempotencyStoreUnavailableError);
      expect(outcomes.at(-1)?.error).toMatchObject({ cause: down });
      store.completeError = undefined;
      await expect(ledger.plain('w-1')).rejects.toBeInstanceOf(IdempotencyKeyInProgressError);
      expect(ledger.runs).toEqual(['w-1']);
    });
  });

  describe('the lease while the method runs', () => {
    it('is renewed every third of the lease until the run settles, and through failed renewals', async () => {
      const gate = new Gate();
      ledger.gate = gate;
      const entered = new Promise<void>((resolve) => (ledger.entered = resolve));
      const running = ledger.plain('l-1');
      await entered;

      await clock.advance(LEASE / 3 - 1);
      expect(store.renewals).toBe(0);
      await clock.advance(1);
      expect(store.renewals).toBe(1);
      expect((await store.get(storeKey('plain', 'l-1')))?.state === 'in_progress').toBe(true);
      store.renewError = new Error('store blip');
      await clock.advance(LEASE / 3);
      expect(store.renewals).toBe(2);
      store.renewError = undefined;
      await clock.advance(LEASE / 3);
      expect(store.renewals).toBe(3);
      // Renewed three times, the lease now runs a full lease from the last renewal.
      await expect(ledger.plain('l-1')).rejects.toMatchObject({ retryAfterMs: LEASE });

      gate.open();
      await expect(running).resolves.toBe('done l-1');
      await clock.advance(LEASE);
      expect(store.renewals).toBe(3);
    });

    it.each([
      ['answers', undefined],
      ['fails', new Error('store blip')],
    ])('is not renewed again when a renewal in flight as the run settles %s', async (_, renewError) => {
      const gate = new Gate();
      ledger.gate = gate;
      const entered = new Promise<void>((resolve) => (ledger.entered = resolve));
      const running = ledger.plain('l-3');
      await entered;
      const renewGate = new Gate();
      store.renewGate = renewGate;
      store.renewError = renewError;
      await clock.advance(LEASE / 3);
      expect(store.renewals).toBe(1);
      gate.open();
      await expect(running).resolves.toBe('done l-3');
      renewGate.open();
      await clock.advance(LEASE);
      expect(store.renewals).toBe(1);
    });

    it('stops renewing once another attempt owns the key', async () => {
      const gate = new Gate();
      ledger.gate = gate;
      const entered = new Promise<void>((resolve) => (ledger.entered = resolve));
      const running = ledger.plain('l-2');
      await entered;
      store.taken = true;
      await clock.advance(LEASE / 3);
      expect(store.renewals).toBe(1);
      await clock.advance(LEASE);
      expect(store.renewals).toBe(1);
      gate.open();
      await running;
    });
  });

  describe('store faults name the store call that failed', () => {
    it.each([
      ['claim', (s: TransactionalMemoryStore) => (s.claimError = new Error('down'))],
      ['connect', (s: TransactionalMemoryStore) => (s.connectError = new Error('down'))],
    ])('%s', async (operation, breakStore) => {
      breakStore(store);
      await expect(ledger.post('f-1')).rejects.toThrow(`${operation} failed`);
      expect(ledger.runs).toEqual([]);
    });

    it('complete', async () => {
      store.completeError = new Error('down');
      await expect(ledger.plain('f-2')).resolves.toBe('done f-2');
      expect(String((outcomes.at(-1)?.error as Error).message)).toContain('complete failed');
    });

    it('release, which keeps the key claimed', async () => {
      store.releaseError = new Error('down');
      ledger.failNext = new HttpException('bad input', 400);
      await expect(ledger.plain('f-3')).rejects.toThrow('bad input');
      expect(outcomes.at(-1)).toMatchObject({ outcome: 'kept_unknown', key: 'f-3' });
      store.releaseError = undefined;
      await expect(ledger.plain('f-3')).rejects.toBeInstanceOf(IdempotencyKeyInProgressError);
    });
  });

  describe('a call that throws', () => {
    it('frees the key on a 4xx and keeps it on a 5xx or an error without a status', async () => {
      const answers: Array<[string, unknown]> = [
        ['e-4xx', new HttpException('conflict', 409)],
        ['e-500', new HttpException('server error', 500)],
        ['e-plain', new Error('crashed')],
      ];
      for (const [id, error] of answers) {
        ledger.failNext = error;
        await expect(ledger.plain(id)).rejects.toBe(error);
      }
      expect(outcomeNames()).toEqual(['released', 'kept_unknown', 'kept_unknown']);
      await expect(ledger.plain('e-4xx')).resolves.toBe('done e-4xx');
      await expect(ledger.plain('e-500')).rejects.toBeInstanceOf(IdempotencyKeyInProgressError);
    });
  });

  describe('a call whose request deadline passes while the method runs', () => {
    async function pastDeadline(id: string, error?: unknown): Promise<{ running: Promise<string> }> {
      const gate = new Gate();
      ledger.gate = gate;
      ledger.failNext = error;
      const entered = new Promise<void>((resolve) => (ledger.entered = resolve));
      const context = new ResilienceContext(clock, clock.now() + 1_000);
      const running = contextStorage.run(context, () => ledger.plain(id));
      running.catch(() => undefined);
      await entered;
      await clock.advance(LEASE / 3);
      gate.open();
      return { running };
    }

    it('still renews the lease and stores the answer', async () => {
      await expect((await pastDeadline('d-1')).running).resolves.toBe('done d-1');
      expect(store.renewals).toBe(1);
      expect(outcomeNames()).toEqual(['executed']);
    });

    it('still frees the key after a 4xx', async () => {
      const refused = new HttpException('bad input', 400);
      await expect((await pastDeadline('d-2', refused)).running).rejects.toBe(refused);
      expect(outcomeNames()).toEqual(['released']);
      await expect(ledger.plain('d-2')).resolves.toBe('done d-2');
    });
  });

  describe('transactional mode', () => {
    it('runs the method in a transaction and commits the stored answer with it', async () => {
      await expect(ledger.post('t-1')).resolves.toBe('posted t-1');
      expect(store.log).toEqual(['BEGIN', 'INSERT', 'completeInTransaction', 'COMMIT', 'release']);
      await expect(ledger.post('t-1')).resolves.toBe('posted t-1');
      expect(ledger.runs).toEqual(['t-1']);
      expect(outcomeNames()).toEqual(['executed', 'replayed']);
    });

    it('rolls back and frees the key when the method throws, whatever the error', async () => {
      ledger.failNext = new Error('insufficient funds check crashed');
      await expect(ledger.post('t-2')).rejects.toThrow('insufficient funds check crashed');
      expect(store.log).toEqual(['BEGIN', 'INSERT', 'ROLLBACK', 'release']);
      expect(outcomes.at(-1)).toMatchObject({ outcome: 'released', key: 't-2' });
      await expect(ledger.post('t-2')).resolves.toBe('posted t-2');
      expect(ledger.runs).toEqual(['t-2', 't-2']);
    });

    it('rolls back and refuses when another attempt took the key over before the commit', async () => {
      store.owns = false;
      await expect(ledger.post('t-3')).rejects.toMatchObject({
        constructor: IdempotencyKeyInProgressError,
        retryAfterMs: LEASE,
      });
      expect(store.log).toEqual(['BEGIN', 'INSERT', 'completeInTransaction', 'ROLLBACK', 'release']);
      expect(outcomes.at(-1)?.outcome).toBe('in_progress');
    });

    it('discards the connection and frees the key when the commit fails', async () => {
      const lost = new Error('connection lost');
      store.failing.set('COMMIT', lost);
      await expect(ledger.post('t-4')).rejects.toBe(lost);
      expect(store.log).toEqual(['BEGIN', 'INSERT', 'completeInTransaction', 'COMMIT', 'release(connection lost)']);
      expect(outcomes.at(-1)).toMatchObject({ outcome: 'released', error: lost });
      expect(await store.get(storeKey('post', 't-4'))).toBeUndefined();
    });

    it('discards the connection when the rollback fails, and still frees the key', async () => {
      store.failing.set('ROLLBACK', new Error('rollback failed'));
      ledger.failNext = new Error('boom');
      await expect(ledger.post('t-5')).rejects.toThrow('boom');
      expect(store.log).toEqual(['BEGIN', 'INSERT', 'ROLLBACK', 'release(rollback failed)']);
      expect(await store.get(storeKey('post', 't-5'))).toBeUndefined();
    });

    it.each([
      ['the connection cannot be had', (s: TransactionalMemoryStore) => (s.connectError = new Error('pool empty')), []],
      [
        'BEGIN fails',
        (s: TransactionalMemoryStore) => s.failing.set('BEGIN', new Error('begin failed')),
        ['BEGIN', expect.stringMatching(/^release\(.*'Ledger\.post': BEGIN failed\)$/)],
      ],
    ])('answers 503 and frees the key when %s, before the method runs', async (_, breakStore, log) => {
      breakStore(store);
      await expect(ledger.post('t-6')).rejects.toBeInstanceOf(IdempotencyStoreUnavailableError);
      expect(ledger.runs).toEqual([]);
      expect(store.log).toEqual(log);
      expect(outcomes.at(-1)?.outcome).toBe('store_unavailable');
      expect(await store.get(storeKey('post', 't-6'))).toBeUndefined();
    });
  });
});
