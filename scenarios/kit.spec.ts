import { grouped, mulberry32, percentile, pythonRandom, table } from './kit';

describe('scenario kit', () => {
  it("pythonRandom replays Python's random.random() after random.seed(n)", () => {
    // python3 -c "import random; random.seed(9); print([random.random() for _ in range(3)])"
    const nine = pythonRandom(9);
    expect([nine(), nine(), nine()]).toEqual([0.46300735781502145, 0.37331193139504204, 0.13853941251445523]);
    const zero = pythonRandom(0);
    expect(zero()).toBe(0.8444218515250481);
    // Past the first 624-word block the twister regenerates; the 2,003rd draw of seed 42 is Python's too.
    const r = pythonRandom(42);
    let last = 0;
    for (let i = 0; i < 2003; i++) last = r();
    expect(last).toBe(0.22104274044603256);
    expect(() => pythonRandom(-1)).toThrow(RangeError);
  });

  it('mulberry32 is deterministic per seed and uniform in [0, 1)', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const draws = Array.from({ length: 10_000 }, () => a());
    expect(Array.from({ length: 10_000 }, () => b())).toEqual(draws);
    expect(draws.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(draws.reduce((s, x) => s + x, 0) / draws.length).toBeCloseTo(0.5, 1);
  });

  it('percentile takes the nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([], 99)).toBeNaN();
  });

  it('table aligns the first column left and the others right', () => {
    expect(
      table(
        ['', 'n'],
        [
          ['a', '1'],
          ['bbb', '100'],
        ],
      ),
    ).toBe(['       n', 'a      1', 'bbb  100'].join('\n'));
    expect(grouped(1140)).toBe('1,140');
  });
});
