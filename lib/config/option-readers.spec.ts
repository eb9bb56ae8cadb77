import { INVALID_VALUE, NOT_AN_OBJECT, UNKNOWN_KEY } from './config.messages';
import {
  booleanOption,
  durationOption,
  enumOption,
  errorListOption,
  functionOption,
  GivenOptions,
  headerNameOption,
  integerOption,
  numberOption,
  objectOption,
  percentOption,
} from './option-readers';

const PLACE = 'test options';

describe('GivenOptions', () => {
  it("binds every spelling Spring's relaxed binding accepts to the known key, and keeps the spelling for messages", () => {
    const given = new GivenOptions({ 'max-attempts': 3, wait_duration: '1s', ENABLE_RETRY: 'TRUE' }, PLACE, [
      'maxAttempts',
      'waitDuration',
      'enableRetry',
      'unset',
    ]);
    expect(given.keys()).toEqual(['maxAttempts', 'waitDuration', 'enableRetry']);
    expect(given.read('maxAttempts', integerOption(1))).toBe(3);
    expect(given.read('waitDuration', durationOption())).toBe(1000);
    expect(given.read('enableRetry', booleanOption)).toBe(true);
    expect(given.read('unset', booleanOption)).toBeUndefined();
    expect(given.has('unset')).toBe(false);
    expect(given.written('waitDuration')).toBe('wait_duration');
    expect(given.written('unset')).toBe('unset');
    expect(() => given.read('maxAttempts', integerOption(5))).toThrow(
      INVALID_VALUE(PLACE, 'max-attempts', 'an integer >= 5', 3),
    );
  });

  it('refuses an unknown key with the closest known one, a key given twice, and anything but an object', () => {
    expect(() => new GivenOptions({ maxAtempts: 3 }, PLACE, ['maxAttempts'])).toThrow(
      UNKNOWN_KEY(PLACE, 'maxAtempts', ['maxAttempts']),
    );
    expect(UNKNOWN_KEY(PLACE, 'maxAtempts', ['maxAttempts'])).toContain("did you mean 'maxAttempts'?");
    expect(() => new GivenOptions({ maxAttempts: 3, 'max-attempts': 4 }, PLACE, ['maxAttempts'])).toThrow(
      INVALID_VALUE(PLACE, 'max-attempts', "given once (also given as another spelling of 'maxAttempts')", 4),
    );
    for (const raw of [null, undefined, [1], 'x', 3])
      expect(() => new GivenOptions(raw, PLACE, ['a'])).toThrow(NOT_AN_OBJECT(PLACE, raw));
  });

  it('hands an unknown key to onUnknown, which may accept it', () => {
    const seen: string[] = [];
    const given = new GivenOptions({ a: 1, legacy: 2 }, PLACE, ['a'], {
      onUnknown: (key) => {
        seen.push(key);
        return key === 'legacy';
      },
    });
    expect(given.keys()).toEqual(['a']);
    expect(seen).toEqual(['legacy']);
    expect(() => new GivenOptions({ other: 1 }, PLACE, ['a'], { onUnknown: () => false })).toThrow(
      UNKNOWN_KEY(PLACE, 'other', ['a']),
    );
  });

  it('reads a nested object in its own place, named after the key as written, and says so when it is not one', () => {
    const given = new GivenOptions({ 'fallback-share': { threshold: 0 } }, PLACE, ['fallbackShare']);
    const nested = given.nested('fallbackShare', ['threshold']);
    expect(nested?.place).toBe(`${PLACE} 'fallback-share'`);
    expect(() => nested?.read('threshold', percentOption)).toThrow(
      INVALID_VALUE(`${PLACE} 'fallback-share'`, 'threshold', 'a percentage in (0, 100]', 0),
    );
    expect(given.nested('absent', [])).toBeUndefined();
    expect(() => new GivenOptions({ share: 5 }, PLACE, ['share']).nested('share', [])).toThrow(
      NOT_AN_OBJECT(`${PLACE} 'share'`, 5),
    );
  });
});

describe('option readers', () => {
  const read = <T>(reader: (value: unknown, place: string, key: string) => T, value: unknown): T =>
    reader(value, PLACE, 'k');
  const bad = (expected: string, value: unknown): string => INVALID_VALUE(PLACE, 'k', expected, value);

  it('read booleans, also as text', () => {
    expect([true, false, 'true', ' False '].map((v) => read(booleanOption, v))).toEqual([true, false, true, false]);
    expect(() => read(booleanOption, 'yes')).toThrow(bad('true or false', 'yes'));
    expect(() => read(booleanOption, 1)).toThrow(bad('true or false', 1));
  });

  it('read integers within bounds, also as digits', () => {
    expect(read(integerOption(0), '12')).toBe(12);
    expect(read(integerOption(1, 3), 3)).toBe(3);
    expect(() => read(integerOption(1), 0)).toThrow(bad('an integer >= 1', 0));
    expect(() => read(integerOption(1, 3), 4)).toThrow(bad('an integer between 1 and 3', 4));
    expect(() => read(integerOption(1), 1.5)).toThrow(bad('an integer >= 1', 1.5));
    expect(() => read(integerOption(1, undefined, 'a positive whole number'), -1)).toThrow(
      bad('a positive whole number', -1),
    );
  });

  it('read numbers within a range, each bound inclusive or not', () => {
    expect(read(numberOption({ min: 0, max: 1 }), '0.5')).toBe(0.5);
    expect(() => read(numberOption({ min: 0, exclusiveMin: true }), 0)).toThrow(bad('a number > 0', 0));
    expect(() => read(numberOption({ min: 0, max: 1, exclusiveMax: true }), 1)).toThrow(
      bad('a number >= 0 and < 1', 1),
    );
    expect(() => read(numberOption({ min: 1 }), Number.NaN)).toThrow(bad('a number >= 1', Number.NaN));
    expect(() => read(percentOption, 101)).toThrow(bad('a percentage in (0, 100]', 101));
  });

  it('read durations; positive ones refuse zero; a section may word the error its own way', () => {
    expect(read(durationOption(), '2s')).toBe(2000);
    expect(read(durationOption(), 0)).toBe(0);
    expect(() => read(durationOption(), 'soon')).toThrow(
      bad('a non-negative duration (ms number or "250ms", "2s", "1m", "24h")', 'soon'),
    );
    expect(() => read(durationOption({ positive: true }), '0ms')).toThrow(bad('a positive duration', '0ms'));
    const worded = durationOption({ positive: true, expected: 'a positive duration (ms)' });
    expect(() => read(worded, 0)).toThrow(bad('a positive duration (ms)', 0));
    expect(() => read(worded, -1)).toThrow(bad('a positive duration (ms)', -1));
  });

  it('read enums in any spelling, answering the listed one', () => {
    const reader = enumOption(['countBased', 'timeBased']);
    expect(read(reader, 'COUNT_BASED')).toBe('countBased');
    expect(read(reader, 'time-based')).toBe('timeBased');
    expect(() => read(reader, 'sliding')).toThrow(bad("one of 'countBased', 'timeBased'", 'sliding'));
  });

  it('read functions and HTTP header names', () => {
    const f = (): number => 1;
    expect(read(functionOption<() => number>(), f)).toBe(f);
    expect(() => read(functionOption(), 'f')).toThrow(bad('a function', 'f'));
    expect(read(headerNameOption, 'X-Request-Id')).toBe('X-Request-Id');
    expect(() => read(headerNameOption, 'x id')).toThrow(bad('an HTTP header name', 'x id'));
  });

  it("read error lists; Spring's text and single class only where Spring binds them", () => {
    expect(read(errorListOption(true), 'java.io.IOException, TimeoutError')).toEqual([
      'java.io.IOException',
      'TimeoutError',
    ]);
    expect(read(errorListOption(true), TypeError)).toEqual([TypeError]);
    expect(read(errorListOption(false), [TypeError, 'RangeError'])).toEqual([TypeError, 'RangeError']);
    const expected = 'a list of error classes or class names';
    expect(() => read(errorListOption(false), TypeError)).toThrow(bad(expected, TypeError));
    expect(() => read(errorListOption(false), 'TypeError')).toThrow(bad(expected, 'TypeError'));
    expect(() => read(errorListOption(true), [' '])).toThrow(bad(expected, [' ']));
  });

  it('read a nested object in the parent place, its keys named parent.key, every field required', () => {
    const budget = objectOption({ ratio: numberOption({ min: 0, max: 1 }), maxTokens: integerOption(1) });
    expect(budget({ ratio: '0.1', 'max-tokens': 10 }, PLACE, 'budget')).toEqual({ ratio: 0.1, maxTokens: 10 });
    expect(() => budget({ ratio: 2, maxTokens: 1 }, PLACE, 'budget')).toThrow(
      INVALID_VALUE(PLACE, 'budget.ratio', 'a number >= 0 and <= 1', 2),
    );
    expect(() => budget({ ratio: 0.1, max: 1 }, PLACE, 'budget')).toThrow(
      UNKNOWN_KEY(PLACE, 'budget.max', ['ratio', 'maxTokens']),
    );
    expect(() => budget({ ratio: 0.1 }, PLACE, 'budget')).toThrow(
      INVALID_VALUE(PLACE, 'budget', "an object with 'maxTokens'", { ratio: 0.1 }),
    );
    expect(() => budget(5, PLACE, 'budget')).toThrow(INVALID_VALUE(PLACE, 'budget', 'an object', 5));
  });
});
