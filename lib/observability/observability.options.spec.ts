import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from '../config/config.messages';
import { STATUS_PUBLIC_AND_GUARDED, STATUS_UNGUARDED } from './observability.messages';
import { ResilienceRegistry } from '../registry/resilience.registry';
import {
  DEFAULT_BUCKETS,
  readEndpointsOptions,
  readHealthOptions,
  readLoggingOptions,
  readMetricsOptions,
} from './observability.options';

class AdminGuard {
  canActivate(): boolean {
    return true;
  }
}

describe('module option metrics', () => {
  it('defaults to on-if-installed with prom-client buckets; a boolean sets enabled', () => {
    const perKeyOff = { perKey: false, perKeySeries: 20 };
    expect(readMetricsOptions(undefined)).toEqual({ enabled: 'auto', buckets: DEFAULT_BUCKETS, ...perKeyOff });
    expect(readMetricsOptions(false)).toEqual({ enabled: false, buckets: DEFAULT_BUCKETS, ...perKeyOff });
    expect(readMetricsOptions({ enabled: 'true', buckets: [0.1, 1] })).toEqual({
      enabled: true,
      registry: undefined,
      buckets: [0.1, 1],
      ...perKeyOff,
    });
  });

  it.each([
    [{ enabled: 'yes' }, INVALID_VALUE('metrics options', 'enabled', 'true or false', 'yes')],
    [{ registry: {} }, INVALID_VALUE('metrics options', 'registry', 'a prom-client Registry', {})],
    [
      { buckets: [] },
      INVALID_VALUE('metrics options', 'buckets', 'a non-empty list of increasing positive numbers (seconds)', []),
    ],
    [
      { buckets: [1, 0.5] },
      INVALID_VALUE(
        'metrics options',
        'buckets',
        'a non-empty list of increasing positive numbers (seconds)',
        [1, 0.5],
      ),
    ],
    [{ bucket: [1] }, UNKNOWN_KEY('metrics options', 'bucket', ['enabled', 'registry', 'buckets'])],
    ['on', NOT_AN_OBJECT('metrics options', 'on')],
  ])('rejects %j naming the key and value', (raw, message) => {
    expect(() => readMetricsOptions(raw)).toThrow(message);
  });

  it('is validated when the registry reads its options, as a section of the module options', () => {
    expect(() => new ResilienceRegistry({ metrics: { enabled: true } })).not.toThrow();
    expect(() => new ResilienceRegistry({ metrix: {} } as never)).toThrow(
      "unknown section 'metrix' (did you mean 'metrics'?)",
    );
  });
});

describe('module option health', () => {
  it('reads the fallback share with defaults, kebab-case keys and durations', () => {
    expect(readHealthOptions(undefined)).toEqual({});
    expect(
      readHealthOptions({ 'fallback-share': { threshold: '25', window: '30s', 'minimum-number-of-calls': 5 } }),
    ).toEqual({
      fallbackShare: { threshold: 25, windowMs: 30_000, minimumNumberOfCalls: 5 },
    });
    expect(readHealthOptions({ fallbackShare: { threshold: 50 } })).toEqual({
      fallbackShare: { threshold: 50, windowMs: 60_000, minimumNumberOfCalls: 10 },
    });
  });

  it.each([
    [
      { fallbackShare: {} },
      INVALID_VALUE("health options 'fallbackShare'", 'threshold', 'a percentage in (0, 100]', undefined),
    ],
    [
      { fallbackShare: { threshold: 0 } },
      INVALID_VALUE("health options 'fallbackShare'", 'threshold', 'a percentage in (0, 100]', 0),
    ],
    [
      { fallbackShare: { threshold: 50, window: '-1s' } },
      INVALID_VALUE(
        "health options 'fallbackShare'",
        'window',
        'a positive duration (ms number or "250ms", "2s", "1m")',
        '-1s',
      ),
    ],
    [
      { fallbackShare: { threshold: 50, minimumNumberOfCalls: 0 } },
      INVALID_VALUE("health options 'fallbackShare'", 'minimumNumberOfCalls', 'an integer >= 1', 0),
    ],
    [{ fallbackshares: {} }, UNKNOWN_KEY('health options', 'fallbackshares', ['fallbackShare'])],
  ])('rejects %j naming the key and value', (raw, message) => {
    expect(() => readHealthOptions(raw)).toThrow(message);
  });
});

describe('module option logging', () => {
  it('defaults to on with a 10 s quiet period', () => {
    expect(readLoggingOptions(undefined)).toEqual({ enabled: true, quietPeriodMs: 10_000 });
    expect(readLoggingOptions(false)).toEqual({ enabled: false, quietPeriodMs: 10_000 });
    expect(readLoggingOptions({ 'quiet-period': '1m' })).toEqual({ enabled: true, quietPeriodMs: 60_000 });
  });

  it('rejects a bad quiet period naming it', () => {
    expect(() => readLoggingOptions({ quietPeriod: 0 })).toThrow(
      INVALID_VALUE('logging options', 'quietPeriod', 'a positive duration (ms number or "250ms", "2s", "1m")', 0),
    );
  });
});

describe('ResilienceEndpointsModule options', () => {
  const place = 'ResilienceEndpointsModule options';

  it('turns nothing on by default; metrics: true takes the default path', () => {
    expect(readEndpointsOptions({})).toEqual({ metrics: undefined, status: undefined });
    expect(readEndpointsOptions({ metrics: true, status: { guards: [AdminGuard] } })).toEqual({
      metrics: { path: 'metrics' },
      status: {
        path: 'actuator',
        eventBufferSize: 100,
        errorMessages: false,
        guards: [AdminGuard],
        public: false,
        writableGuards: undefined,
      },
    });
    expect(readEndpointsOptions({ metrics: { path: '/ops/metrics/' } }).metrics).toEqual({ path: 'ops/metrics' });
  });

  it.each([
    ['status: true', { status: true }],
    ['status: {}', { status: {} }],
    ['an empty guard list', { status: { guards: [] } }],
    ['public: false', { status: { public: false } }],
    ['guards for the writable routes only', { status: { writable: { guards: [AdminGuard] } } }],
  ])('refuses status routes without guards unless public: true is said (%s)', (_, raw) => {
    expect(() => readEndpointsOptions(raw)).toThrow(STATUS_UNGUARDED);
    expect(STATUS_UNGUARDED).toContain("'guards'");
    expect(STATUS_UNGUARDED).toContain("'public: true'");
  });

  it('serves the status routes unguarded when public: true is said, and refuses public with guards', () => {
    expect(readEndpointsOptions({ status: { public: true } }).status?.guards).toEqual([]);
    expect(readEndpointsOptions({ status: { public: 'true' } }).status?.guards).toEqual([]);
    expect(
      readEndpointsOptions({ status: { public: true, writable: { guards: [AdminGuard] } } }).status?.writableGuards,
    ).toEqual([AdminGuard]);
    expect(() => readEndpointsOptions({ status: { public: true, guards: [AdminGuard] } })).toThrow(
      STATUS_PUBLIC_AND_GUARDED,
    );
    expect(() => readEndpointsOptions({ status: { public: 'yes' } })).toThrow(
      INVALID_VALUE(`${place} 'status'`, 'public', 'true or false', 'yes'),
    );
  });

  it('needs guards for the routes that change state', () => {
    expect(
      readEndpointsOptions({ status: { guards: [AdminGuard], writable: { guards: [AdminGuard] } } }).status
        ?.writableGuards,
    ).toEqual([AdminGuard]);
    expect(
      readEndpointsOptions({ status: { guards: [AdminGuard], writable: false } }).status?.writableGuards,
    ).toBeUndefined();
    expect(() => readEndpointsOptions({ status: { guards: [AdminGuard], writable: {} } })).toThrow(
      INVALID_VALUE(
        `${place} 'status' 'writable'`,
        'guards',
        'a non-empty list of guards (classes or instances)',
        undefined,
      ),
    );
    expect(() => readEndpointsOptions({ status: { guards: [AdminGuard], writable: { guards: [] } } })).toThrow(
      INVALID_VALUE(`${place} 'status' 'writable'`, 'guards', 'a non-empty list of guards (classes or instances)', []),
    );
  });

  it.each([
    [
      { metrics: { path: 'has space' } },
      INVALID_VALUE(`${place} 'metrics'`, 'path', 'a route path such as "metrics" or "/ops/metrics"', 'has space'),
    ],
    [{ status: { eventBufferSize: 0 } }, INVALID_VALUE(`${place} 'status'`, 'eventBufferSize', 'an integer >= 1', 0)],
    [
      { status: { guards: ['AdminGuard'] } },
      INVALID_VALUE(`${place} 'status'`, 'guards', 'a list of guards (classes or instances)', ['AdminGuard']),
    ],
    [
      { status: { readonly: true } },
      UNKNOWN_KEY(`${place} 'status'`, 'readonly', [
        'path',
        'eventBufferSize',
        'errorMessages',
        'guards',
        'public',
        'writable',
      ]),
    ],
    [{ prometheus: true }, UNKNOWN_KEY(place, 'prometheus', ['metrics', 'status'])],
  ])('rejects %j naming the key and value', (raw, message) => {
    expect(() => readEndpointsOptions(raw)).toThrow(message);
  });
});
