const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIMPLE = /^(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h|d)$/i;
const ISO = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i;

/**
 * A duration in config: milliseconds as a number, or a string such as
 * `"250ms"`, `"2s"`, `"1m"`, `"24h"`, `"1d"` or ISO-8601 `"PT2S"`.
 */
export type Duration = number | string;

/**
 * Parses a {@link Duration} to milliseconds; returns `undefined` when the
 * value is not a valid non-negative duration (the caller names the key).
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const ms = parseDurationText(value.trim());
  // Digits past a double's range read as Infinity, which is refused as a number is.
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined;
}

/** The milliseconds `text` (already trimmed) writes, or `undefined`. */
function parseDurationText(text: string): number | undefined {
  if (/^\d+(?:\.\d+)?$/.test(text)) return Number(text);
  const simple = SIMPLE.exec(text);
  if (simple) return Number(simple[1]) * UNIT_MS[simple[2].toLowerCase()];
  const iso = ISO.exec(text);
  if (iso && text.length > 1 && !/T$/i.test(text)) {
    const [, d, h, m, s] = iso;
    return (Number(d ?? 0) * 24 * 3600 + Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0)) * 1000;
  }
  return undefined;
}
