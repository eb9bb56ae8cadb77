import { Controller, Injectable, Logger, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defer, lastValueFrom, Observable, of } from 'rxjs';
import { systemClock, VirtualClock } from '../../lib/kernel/clock';
import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from '../../lib/config/config.messages';
import {
  DEFAULT_IDEMPOTENCY_HEADER,
  downstreamIdempotencyKey,
  Idempotent,
  idempotencyTransaction,
  IdempotencyOutcomeUnknownError,
  IdempotencyRegistry,
  MemoryIdempotencyStore,
  ResilienceModule,
  ResilienceModuleOptions,
  ResilienceRegistry,
} from '../../lib';
import { wallClock } from '../../lib/features/idempotency/idempotency-store';
import {
  canonicalJson,
  deriveDownstreamKey,
  fingerprintOf,
  parseIdempotencyKey,
  scopedKey,
} from '../../lib/features/idempotency/idempotency-key';
import {
  IDEMPOTENCY_OPTIONS_PLACE,
  idempotentPlace,
  KEY_ON_ROUTE,
  KEY_REQUIRED,
  PRINCIPAL_EXPECTED,
  PRINCIPAL_NOT_ON_ROUTE,
  NO_RECONCILER,
  NOT_TRANSACTIONAL,
  OUTSIDE_IDEMPOTENT_CALL,
  STORE_NOT_TRANSACTIONAL,
  TTL_SHORTER_THAN_LEASE,
} from '../../lib/features/idempotency/idempotency.messages';
import { DECORATOR_ON_NON_METHOD } from '../../lib/kernel/resilience.messages';

describe('parseIdempotencyKey', () => {
  it.each([
    ['abc', 'abc'],
    ['  abc  ', 'abc'],
    ['"abc"', 'abc'],
    ['"a\\"b\\\\c"', 'a"b\\c'],
    ['a b', 'a b'],
    ['550e8400-e29b-41d4-a716-446655440000', '550e8400-e29b-41d4-a716-446655440000'],
  ])('accepts %j as %j', (raw, key) => expect(parseIdempotencyKey([raw])).toEqual({ kind: 'valid', key }));

  it('accepts 255 characters, bare or quoted', () => {
    expect(parseIdempotencyKey(['k'.repeat(255)])).toEqual({ kind: 'valid', key: 'k'.repeat(255) });
    expect(parseIdempotencyKey([`"${'k'.repeat(255)}"`])).toEqual({ kind: 'valid', key: 'k'.repeat(255) });
  });

  it.each([
    ['', /empty/],
    ['""', /empty/],
    ['a\u0000b', /printable ASCII/],
    ['a\nb', /printable ASCII/],
    ['a\tb', /printable ASCII/],
    ['a\u007fb', /printable ASCII/],
    ['ключ', /printable ASCII/],
    ['"abc', /quoted key/],
    ['"abc"def', /quoted key/],
    ['"a\\bc"', /quoted key/],
  ])('refuses %j', (raw, reason) => {
    const parsed = parseIdempotencyKey([raw]);
    expect(parsed.kind).toBe('invalid');
    expect((parsed as { reason: string }).reason).toMatch(reason);
  });

  it('refuses 256 characters, bare or quoted', () => {
    expect(parseIdempotencyKey(['k'.repeat(256)])).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/256 characters/),
    });
    expect(parseIdempotencyKey([`"${'k'.repeat(256)}"`])).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/256 characters/),
    });
  });

  it('treats no header as absent and a repeated header as invalid', () => {
    expect(parseIdempotencyKey(undefined)).toEqual({ kind: 'absent' });
    expect(parseIdempotencyKey([])).toEqual({ kind: 'absent' });
    expect(parseIdempotencyKey(['a', 'b'])).toEqual({ kind: 'invalid', reason: 'it was sent more than once' });
  });
});

describe('canonical JSON and fingerprints', () => {
  const cycle = () => 'cycle';

  it('sorts keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } }, cycle)).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(fingerprintOf({ b: 1, a: 2 }, cycle)).toBe(fingerprintOf({ a: 2, b: 1 }, cycle));
    expect(fingerprintOf([1, 2], cycle)).not.toBe(fingerprintOf([2, 1], cycle));
  });

  it('follows JSON.stringify for undefined, functions, non-finite numbers, toJSON and dates', () => {
    const value = {
      u: undefined,
      f: () => 1,
      n: Number.NaN,
      list: [undefined, () => 1],
      when: new Date(0),
      custom: { toJSON: () => 'custom' },
    };
    expect(canonicalJson(value, cycle)).toBe(
      '{"custom":"custom","list":[null,null],"n":null,"when":"1970-01-01T00:00:00.000Z"}',
    );
    expect(canonicalJson(undefined, cycle)).toBe('null');
  });

  it('writes bigints and bytes, and refuses cycles', () => {
    expect(canonicalJson({ big: 10n, bytes: new Uint8Array([1, 2, 3]) }, cycle)).toBe('{"big":"10n","bytes":"AQID"}');
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(() => canonicalJson(loop, cycle)).toThrow('cycle');
    const shared = { x: 1 };
    expect(canonicalJson([shared, shared], cycle)).toBe('[{"x":1},{"x":1}]');
  });

  it('scopes keys so that no key can reach into another scope', () => {
    expect(scopedKey('alice', 'POST', '/payments', 'k')).not.toBe(scopedKey(undefined, 'POST', '/payments', 'k'));
    expect(scopedKey('a","POST', 'POST', '/p', 'k')).not.toBe(scopedKey('a', 'POST', '/p', '","POST","/p","k'));
  });

  it('derives a UUID-shaped downstream key from the record, stable for one operation', () => {
    const key = deriveDownstreamKey('["u","POST","/p","k"]', 1000, '');
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(deriveDownstreamKey('["u","POST","/p","k"]', 1000, '')).toBe(key);
    expect(deriveDownstreamKey('["u","POST","/p","k"]', 1001, '')).not.toBe(key);
    expect(deriveDownstreamKey('["u","POST","/p","k"]', 1000, 'refund')).not.toBe(key);
  });
});

describe('idempotency module options', () => {
  const place = IDEMPOTENCY_OPTIONS_PLACE;
  const idempotencyOf = (idempotency: unknown, clock?: VirtualClock) =>
    new IdempotencyRegistry(new ResilienceRegistry({ clock, idempotency })).options;
  const messageOf = (idempotency: unknown): string => {
    try {
      idempotencyOf(idempotency);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected the options to be rejected');
  };

  it('defaults to a memory store on the wall clock, 24 h TTL, 30 s lease and the IETF header', () => {
    const options = idempotencyOf(undefined);
    expect(options).toMatchObject({
      ttlMs: 86_400_000,
      leaseMs: 30_000,
      header: 'idempotency-key',
      headerLabel: DEFAULT_IDEMPOTENCY_HEADER,
    });
    expect(options.replayHeaders).toEqual(['location', 'content-type', 'etag']);
    expect(options.store).toBeInstanceOf(MemoryIdempotencyStore);
    expect((options.store as unknown as { clock: unknown }).clock).toBe(wallClock);
    expect(systemClock).not.toBe(wallClock);
  });

  it('puts the default store on an injected clock', async () => {
    const clock = new VirtualClock(5_000);
    const { store } = idempotencyOf({}, clock);
    const claim = await store.claim('k', 'fp');
    expect(claim).toMatchObject({ outcome: 'claimed', record: { createdAt: 5_000 } });
  });

  it('reads durations and kebab-case keys', () => {
    const options = idempotencyOf({
      ttl: '2h',
      lease: 'PT10S',
      'replay-headers': ['Location', 'X-Request-Id'],
      header: 'X-Idempotency-Key',
    });
    expect(options).toMatchObject({
      ttlMs: 7_200_000,
      leaseMs: 10_000,
      header: 'x-idempotency-key',
      replayHeaders: ['location', 'x-request-id'],
    });
  });

  it.each([
    [
      'ttl',
      { ttl: -1 },
      INVALID_VALUE(place, 'ttl', 'a positive duration (ms, or a string such as "30s" or "24h")', -1),
    ],
    [
      'lease',
      { lease: '0s' },
      INVALID_VALUE(place, 'lease', 'a positive duration (ms, or a string such as "30s" or "24h")', '0s'),
    ],
    ['ttl shorter than lease', { ttl: '10s', lease: '30s' }, TTL_SHORTER_THAN_LEASE(place, 10_000, 30_000)],
    ['header', { header: 'Idempotency Key' }, INVALID_VALUE(place, 'header', 'an HTTP header name', 'Idempotency Key')],
    ['principal', { principal: 'user' }, INVALID_VALUE(place, 'principal', PRINCIPAL_EXPECTED, 'user')],
    ['reconciler', { reconciler: {} }, INVALID_VALUE(place, 'reconciler', 'a function', {})],
    [
      'replayHeaders not a list',
      { replayHeaders: 'location' },
      INVALID_VALUE(place, 'replayHeaders', 'a list of HTTP header names', 'location'),
    ],
    [
      'replayHeaders with Set-Cookie',
      { replayHeaders: ['Location', 'Set-Cookie'] },
      INVALID_VALUE(place, 'replayHeaders', 'a list of header names without Set-Cookie, which is never replayed', [
        'Location',
        'Set-Cookie',
      ]),
    ],
    [
      'store',
      { store: { claim: () => undefined } },
      INVALID_VALUE(
        place,
        'store',
        'an IdempotencyStore (an object with claim, complete, release, renew, get, cleanupExpired)',
        { claim: () => undefined },
      ),
    ],
    [
      'a misspelt key',
      { tll: '1h' },
      UNKNOWN_KEY(place, 'tll', ['store', 'ttl', 'lease', 'header', 'principal', 'replayHeaders', 'reconciler']),
    ],
    ['not an object', '24h', NOT_AN_OBJECT(place, '24h')],
  ])('rejects %s', (_, idempotency, message) => expect(messageOf(idempotency)).toBe(message));

  it('fails bootstrap with the message', async () => {
    const compile = Test.createTestingModule({
      imports: [ResilienceModule.forRoot({ idempotency: { ttl: 'soon' } })],
    }).compile();
    await expect(compile).rejects.toThrow(/idempotency options: key 'ttl' must be a positive duration .*got "soon"/);
  });
});

describe('@Idempotent options', () => {
  const decorate = (options: unknown) => {
    class Target {
      handle(): void {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'handle') as PropertyDescriptor;
    Idempotent(options as never)(Target.prototype, 'handle', descriptor);
  };
  const place = idempotentPlace('Target.handle');

  it.each([
    ['required', { required: 'yes' }, INVALID_VALUE(place, 'required', 'true or false', 'yes')],
    ['key', { key: 'id' }, INVALID_VALUE(place, 'key', 'a function', 'id')],
    [
      'ttl',
      { ttl: '1 day' },
      INVALID_VALUE(place, 'ttl', 'a positive duration (ms, or a string such as "30s" or "24h")', '1 day'),
    ],
    ['ttl shorter than lease', { lease: '1m', ttl: '30s' }, TTL_SHORTER_THAN_LEASE(place, 30_000, 60_000)],
    [
      'releaseOn',
      { releaseOn: Error },
      INVALID_VALUE(place, 'releaseOn', 'a list of error classes or class names', Error),
    ],
    ['onStatus', { onStatus: 500 }, INVALID_VALUE(place, 'onStatus', 'a function', 500)],
    ['transactional', { transactional: 1 }, INVALID_VALUE(place, 'transactional', 'true or false', 1)],
    ['principal', { principal: 'everyone' }, INVALID_VALUE(place, 'principal', PRINCIPAL_EXPECTED, 'everyone')],
    [
      'a misspelt option',
      { keys: () => 'x' },
      UNKNOWN_KEY(place, 'keys', [
        'required',
        'key',
        'fingerprint',
        'principal',
        'ttl',
        'lease',
        'onStatus',
        'releaseOn',
        'transactional',
        'reconciler',
      ]),
    ],
  ])('rejects %s where it is written', (_, options, message) => expect(() => decorate(options)).toThrow(message));

  it('only decorates methods', () => {
    expect(() => (Idempotent() as unknown as ClassDecorator)(class Payments {})).toThrow(
      DECORATOR_ON_NON_METHOD('Idempotent', 'Payments.(class)'),
    );
  });
});

describe('@Idempotent at bootstrap', () => {
  const boot = async (options: ResilienceModuleOptions, metadata: { controllers?: any[]; providers?: any[] }) => {
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot(options)],
      ...metadata,
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  };

  it('needs a key function on a method that is not a route', async () => {
    @Injectable()
    class Consumer {
      @Idempotent()
      async handle(): Promise<void> {}
    }
    await expect(boot({}, { providers: [Consumer] })).rejects.toThrow(KEY_REQUIRED('Consumer.handle'));
  });

  it('refuses a key function on a route, whose key is the header', async () => {
    @Controller()
    class Keyed {
      @Post()
      @Idempotent({ key: () => 'k' })
      async handle(): Promise<void> {}
    }
    await expect(boot({}, { controllers: [Keyed] })).rejects.toThrow(KEY_ON_ROUTE('Keyed.handle', 'key'));
  });

  it('refuses transactional mode on a store outside any database', async () => {
    @Controller()
    class Tx {
      @Post()
      @Idempotent({ transactional: true })
      async handle(): Promise<void> {}
    }
    await expect(boot({ idempotency: { principal: 'shared' } }, { controllers: [Tx] })).rejects.toThrow(
      STORE_NOT_TRANSACTIONAL('Tx.handle', 'MemoryIdempotencyStore'),
    );
  });

  it('refuses a principal on a method that is not a route', async () => {
    @Injectable()
    class Consumer {
      @Idempotent({ key: (id: string) => id, principal: 'shared' })
      async handle(_id: string): Promise<void> {}
    }
    await expect(boot({}, { providers: [Consumer] })).rejects.toThrow(PRINCIPAL_NOT_ON_ROUTE('Consumer.handle'));
  });

  it('warns once when a stale key has no reconciler, and keeps refusing it', async () => {
    const clock = new VirtualClock();
    @Injectable()
    class Consumer {
      runs = 0;

      @Idempotent({ key: (id: string) => id })
      async handle(_id: string): Promise<void> {
        this.runs++;
        throw new Error('unknown outcome');
      }
    }
    const warnings: string[] = [];
    const spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
    try {
      const app = await boot({ clock }, { providers: [Consumer] });
      const consumer = app.get(Consumer);
      await expect(consumer.handle('m')).rejects.toThrow('unknown outcome');
      for (let i = 0; i < 2; i++) {
        await clock.advance(30_000);
        await expect(consumer.handle('m')).rejects.toBeInstanceOf(IdempotencyOutcomeUnknownError);
      }
      expect(consumer.runs).toBe(1);
      expect(warnings).toEqual([NO_RECONCILER('Consumer.handle')]);
      await app.close();
    } finally {
      spy.mockRestore();
    }
  });

  it('runs a route method called directly, outside any request, unprotected', async () => {
    @Controller()
    class Direct {
      runs = 0;

      @Post()
      @Idempotent()
      async handle(): Promise<number> {
        return ++this.runs;
      }

      @Post('stream')
      @Idempotent()
      stream(): Observable<number> {
        return defer(() => of(++this.runs));
      }
    }
    const app = await boot({ idempotency: { principal: 'shared' } }, { controllers: [Direct] });
    const direct = app.get(Direct);
    expect([await direct.handle(), await direct.handle()]).toEqual([1, 2]);
    expect([await lastValueFrom(direct.stream()), await lastValueFrom(direct.stream())]).toEqual([3, 4]);
    await app.close();
  });
});

describe('helpers outside a protected call', () => {
  it('refuse to guess a key or a transaction', () => {
    expect(() => downstreamIdempotencyKey()).toThrow(OUTSIDE_IDEMPOTENT_CALL('downstreamIdempotencyKey'));
    expect(() => idempotencyTransaction()).toThrow(OUTSIDE_IDEMPOTENT_CALL('idempotencyTransaction'));
  });

  it('idempotencyTransaction refuses a method that is not transactional', async () => {
    @Injectable()
    class Plain {
      @Idempotent({ key: (id: string) => id })
      async handle(_id: string): Promise<unknown> {
        return idempotencyTransaction();
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [ResilienceModule.forRoot()],
      providers: [Plain],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await expect(app.get(Plain).handle('k')).rejects.toThrow(NOT_TRANSACTIONAL('Plain.handle'));
    await app.close();
  });
});
