import { escapeXml, lineChart, niceTicks } from './svg';

describe('svg chart writer', () => {
  it('picks round ticks that cover the data', () => {
    expect(niceTicks(1140, 6)).toEqual([0, 200, 400, 600, 800, 1000, 1200]);
    expect(niceTicks(140, 6)).toEqual([0, 50, 100, 150]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });

  it('escapes text', () => {
    expect(escapeXml(`a < b & "c" > 'd'`)).toBe('a &lt; b &amp; &quot;c&quot; &gt; &apos;d&apos;');
  });

  it('writes one polyline and one legend entry per series, with finite coordinates', () => {
    const svg = lineChart({
      title: 'load <test>',
      xLabel: 'time (s)',
      yLabel: 'requests/s',
      series: [
        {
          label: 'a',
          points: [
            [0, 1],
            [1, 5],
            [2, 3],
          ],
        },
        {
          label: 'b & c',
          points: [
            [0, 2],
            [2, 2],
          ],
          dashed: true,
        },
      ],
      lines: [{ y: 4, label: 'capacity' }],
      bands: [{ from: 1, to: 2, label: 'spike' }],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg).toContain('load &lt;test&gt;');
    expect(svg).toContain('b &amp; c');
    expect(svg).not.toMatch(/NaN|Infinity/);
  });
});
