import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from '../../config/config.messages';
import { readLoadSheddingOptions } from './load-shedding.options';

const PLACE = 'loadShedding options';

describe('readLoadSheddingOptions', () => {
  it('sets no signal when the section is absent, and fills the defaults of a given one', () => {
    expect(readLoadSheddingOptions(undefined)).toEqual({
      shares: { critical: 0, high: 0, normal: 0, low: 0 },
      retryAfterMs: 1000,
    });
    expect(
      readLoadSheddingOptions({
        'max-concurrent-requests': 200,
        adaptive: { algorithm: 'VEGAS' },
        eventLoopDelay: { threshold: '100ms' },
      }),
    ).toEqual({
      maxConcurrentRequests: 200,
      adaptive: {
        algorithm: 'vegas',
        initialLimit: 20,
        minLimit: 1,
        maxLimit: 1000,
        smoothing: 1,
        queueSize: 4,
        longWindow: 600,
        probeMultiplier: 30,
      },
      eventLoopDelay: { thresholdMs: 100, sampleIntervalMs: 500 },
      shares: { critical: 0, high: 0, normal: 0, low: 0 },
      priorityHeader: undefined,
      retryAfterMs: 1000,
    });
  });

  it('reads priorityHeader as a name the header may set any class through, or as { name, max } capping what it may claim', () => {
    expect(readLoadSheddingOptions({ priorityHeader: 'X-Priority' }).priorityHeader).toEqual({
      name: 'x-priority',
      max: 'critical',
    });
    expect(readLoadSheddingOptions({ priorityHeader: { name: 'X-Priority' } }).priorityHeader).toEqual({
      name: 'x-priority',
      max: 'low',
    });
    expect(readLoadSheddingOptions({ 'priority-header': { name: 'x-priority', max: 'HIGH' } }).priorityHeader).toEqual({
      name: 'x-priority',
      max: 'high',
    });
  });

  it('moves an unset bound out of the way of the limits that are set', () => {
    expect(readLoadSheddingOptions({ adaptive: { initialLimit: 5, maxLimit: 50 } })?.adaptive).toMatchObject({
      initialLimit: 5,
      minLimit: 5,
      maxLimit: 50,
    });
  });

  it.each([
    [{ maxConcurrentRequests: 0 }, INVALID_VALUE(PLACE, 'maxConcurrentRequests', 'a positive whole number', 0)],
    [
      { maxConcurentRequests: 5 },
      UNKNOWN_KEY(PLACE, 'maxConcurentRequests', [
        'maxConcurrentRequests',
        'adaptive',
        'eventLoopDelay',
        'priorities',
        'priorityHeader',
        'retryAfter',
      ]),
    ],
    [{ priorities: { low: 1 } }, INVALID_VALUE(`${PLACE} 'priorities'`, 'low', 'a share in [0, 1)', 1)],
    [
      { priorities: { urgent: 0.1 } },
      UNKNOWN_KEY(`${PLACE} 'priorities'`, 'urgent', ['critical', 'high', 'normal', 'low']),
    ],
    [
      { adaptive: { algorithm: 'aimd' } },
      INVALID_VALUE(`${PLACE} 'adaptive'`, 'algorithm', "'gradient2' or 'vegas'", 'aimd'),
    ],
    [
      { adaptive: { initialLimit: 500, maxLimit: 100 } },
      INVALID_VALUE(`${PLACE} 'adaptive'`, 'initialLimit', 'between minLimit (5) and maxLimit (100)', 500),
    ],
    [
      { adaptive: { minLimit: 50, maxLimit: 10 } },
      INVALID_VALUE(`${PLACE} 'adaptive'`, 'minLimit', 'at most maxLimit (10)', 50),
    ],
    [{ adaptive: { smoothing: 0 } }, INVALID_VALUE(`${PLACE} 'adaptive'`, 'smoothing', 'a number in (0, 1]', 0)],
    [
      { eventLoopDelay: { sampleInterval: '1s' } },
      INVALID_VALUE(`${PLACE} 'eventLoopDelay'`, 'threshold', 'a positive duration (it is required)', undefined),
    ],
    [
      { eventLoopDelay: { threshold: '-5ms' } },
      INVALID_VALUE(`${PLACE} 'eventLoopDelay'`, 'threshold', 'a positive duration', '-5ms'),
    ],
    [{ priorityHeader: 'x priority' }, INVALID_VALUE(PLACE, 'priorityHeader', 'an HTTP header name', 'x priority')],
    [
      { priorityHeader: { name: 'x priority' } },
      INVALID_VALUE(PLACE, 'priorityHeader.name', 'an HTTP header name', 'x priority'),
    ],
    [
      { priorityHeader: { max: 'high' } },
      INVALID_VALUE(PLACE, 'priorityHeader.name', 'an HTTP header name (it is required)', undefined),
    ],
    [
      { priorityHeader: { name: 'x-priority', max: 'urgent' } },
      INVALID_VALUE(PLACE, 'priorityHeader.max', "one of 'critical', 'high', 'normal', 'low'", 'urgent'),
    ],
    [
      { priorityHeader: { name: 'x-priority', cap: 'high' } },
      UNKNOWN_KEY(PLACE, 'priorityHeader.cap', ['name', 'max']),
    ],
    [{ priorityHeader: 42 }, INVALID_VALUE(PLACE, 'priorityHeader', 'an HTTP header name or { name, max }', 42)],
    [{ retryAfter: 'soon' }, INVALID_VALUE(PLACE, 'retryAfter', 'a positive duration', 'soon')],
    [['maxConcurrentRequests'], NOT_AN_OBJECT(PLACE, ['maxConcurrentRequests'])],
  ])('refuses %j with a message naming the key and value', (options, message) => {
    expect(() => readLoadSheddingOptions(options)).toThrow(message);
  });
});
