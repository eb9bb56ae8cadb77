import * as fc from 'fast-check';
import { canonicalJson, fingerprintOf } from './idempotency-key';

const onCycle = (): string => 'cycle';

/** `value` rebuilt with every object's keys inserted in an order drawn from `order`. */
function reordered(value: unknown, order: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => reordered(item, order));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(order() * (i + 1));
    [keys[i], keys[j]] = [keys[j], keys[i]];
  }
  const copy: Record<string, unknown> = {};
  // defineProperty, so a "__proto__" key stays an own key as JSON.parse makes it.
  for (const key of keys) {
    Object.defineProperty(copy, key, {
      value: reordered((value as Record<string, unknown>)[key], order),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** JSON of a JSON value with each object's keys in code-unit order, spelled out independently of the code under test. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${sortedJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

const orders = fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));
const drawFrom = (stream: fc.Stream<number>): (() => number) => {
  const iterator = stream[Symbol.iterator]();
  return () => iterator.next().value as number;
};

describe('canonicalJson and fingerprintOf (properties)', () => {
  it('give the same text and fingerprint whatever order object keys were written in', () => {
    fc.assert(
      fc.property(fc.jsonValue(), orders, (value, stream) => {
        const shuffled = reordered(value, drawFrom(stream));
        expect(canonicalJson(shuffled, onCycle)).toBe(canonicalJson(value, onCycle));
        expect(fingerprintOf(shuffled, onCycle)).toBe(fingerprintOf(value, onCycle));
      }),
    );
  });

  it('write what JSON.stringify writes of the value with its keys sorted', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value, onCycle)).toBe(sortedJson(value));
      }),
    );
  });

  it('are stable: the canonical text of the parsed canonical text is itself', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value, onCycle);
        expect(canonicalJson(JSON.parse(text), onCycle)).toBe(text);
      }),
    );
  });

  it('tell apart values whose JSON differs', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(sortedJson(a) !== sortedJson(b));
        expect(fingerprintOf(a, onCycle)).not.toBe(fingerprintOf(b, onCycle));
      }),
    );
  });

  it('leave undefined out of objects and write it as null in arrays, as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.option(fc.integer(), { nil: undefined })), (record) => {
        expect(canonicalJson(record, onCycle)).toBe(sortedJson(JSON.parse(JSON.stringify(record))));
        expect(canonicalJson(Object.values(record), onCycle)).toBe(JSON.stringify(Object.values(record)));
      }),
    );
  });
});
