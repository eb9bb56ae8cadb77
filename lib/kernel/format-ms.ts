/** A duration in ms as printed in messages and logs: whole milliseconds from 10 ms up, tenths below. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  return String(Math.abs(ms) >= 9.95 ? Math.round(ms) : Math.round(ms * 10) / 10);
}

/** A duration in ms as carried in served events: rounded to the microsecond. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
