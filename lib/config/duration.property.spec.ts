import * as fc from 'fast-check';
import { parseDuration } from './duration';

/** Milliseconds per unit, written out independently of the parser's table. */
const UNITS: ReadonlyArray<readonly [string, number]> = [
  ['ns', 1e-6],
  ['us', 1e-3],
  ['ms', 1],
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
];

const randomCase = (text: string, upper: readonly boolean[]): string =>
  [...text].map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c)).join('');

describe('parseDuration (properties)', () => {
  it('takes a finite non-negative number as milliseconds and refuses any other number', () => {
    fc.assert(
      fc.property(fc.double(), (n) => {
        expect(parseDuration(n)).toBe(Number.isFinite(n) && n >= 0 ? n : undefined);
      }),
    );
  });

  it('reads "<amount><unit>" in any letter case, with or without spaces, as amount × the unit', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 1_000_000 }),
        fc.constantFrom(...UNITS),
        fc.constantFrom('', ' ', '  '),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 2 }),
        fc.constantFrom('', ' ', '\t'),
        (amount, [unit, ms], gap, upper, pad) => {
          expect(parseDuration(`${pad}${amount}${gap}${randomCase(unit, upper)}${pad}`)).toBe(amount * ms);
        },
      ),
    );
  });

  it('round-trips milliseconds through "<n>ms", "<n>" and decimal seconds', () => {
    fc.assert(
      fc.property(fc.nat({ max: 10_000_000 }), (ms) => {
        expect(parseDuration(`${ms}ms`)).toBe(ms);
        expect(parseDuration(String(ms))).toBe(ms);
        expect(parseDuration(`${ms / 1000}s`)).toBeCloseTo(ms, 6);
      }),
    );
  });

  it('reads ISO-8601 "P<d>DT<h>H<m>M<s>S" with any parts left out', () => {
    fc.assert(
      fc.property(
        fc.option(fc.nat({ max: 400 })),
        fc.option(fc.nat({ max: 100 })),
        fc.option(fc.nat({ max: 100 })),
        fc.option(fc.nat({ max: 100_000 })),
        fc.boolean(),
        (d, h, m, s, lower) => {
          const time = `${h === null ? '' : `${h}H`}${m === null ? '' : `${m}M`}${s === null ? '' : `${s}S`}`;
          const text = `P${d === null ? '' : `${d}D`}${time === '' ? '' : `T${time}`}`;
          const expected =
            d === null && time === ''
              ? undefined
              : ((d ?? 0) * 86_400 + (h ?? 0) * 3600 + (m ?? 0) * 60 + (s ?? 0)) * 1000;
          expect(parseDuration(lower ? text.toLowerCase() : text)).toBe(expected);
        },
      ),
    );
  });

  it('refuses negative amounts, unknown units, an empty time part and stray characters', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom(...UNITS), (amount, [unit]) => {
        expect(parseDuration(`-${amount}${unit}`)).toBeUndefined();
        expect(parseDuration(`${amount}${unit}x`)).toBeUndefined();
        expect(parseDuration(`${amount}${unit}${unit}`)).toBeUndefined();
        expect(parseDuration(`${amount} ${unit} ago`)).toBeUndefined();
        expect(parseDuration(`P${amount}DT`)).toBeUndefined();
        expect(parseDuration(`${amount}.${unit}`)).toBeUndefined();
      }),
    );
    for (const garbage of ['', ' ', 'P', 'PT', 'T1S', 'ms', '1e3', '0x10', '1,5s', 'Infinity', 'NaN', '1 s 2 ms']) {
      expect(parseDuration(garbage)).toBeUndefined();
    }
  });

  it('refuses a string too long to be a finite number, as it refuses the number Infinity', () => {
    fc.assert(
      fc.property(fc.integer({ min: 310, max: 400 }), fc.constantFrom('', 'ms', 's', 'd'), (digits, unit) => {
        expect(parseDuration(`${'9'.repeat(digits)}${unit}`)).toBeUndefined();
        expect(parseDuration(`P${'9'.repeat(digits)}D`)).toBeUndefined();
      }),
    );
  });

  it('never throws, and answers undefined or a finite non-negative number, whatever it is given', () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.string(), fc.stringMatching(/^[0-9PTDHMSmsunhd. -]{0,12}$/)), (value) => {
        const parsed = parseDuration(value);
        if (parsed !== undefined) {
          expect(Number.isFinite(parsed)).toBe(true);
          expect(parsed).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});
