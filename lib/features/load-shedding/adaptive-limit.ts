/**
 * A concurrency limit that moves with measured latency. Fed one sample per
 * admitted request when it ends; read before each admission.
 */
export interface AdaptiveLimit {
  /** The current limit (fractional; admission compares against it rounded down). */
  readonly limit: number;
  /**
   * Records one finished request.
   *
   * @param rttMs - how long it took, from admission to the end of the answer
   * @param inflight - requests in flight when it was admitted (itself included)
   * @param dropped - whether it ended as an overload answer (a 503 or 504) or was abandoned by the client
   */
  onSample(rttMs: number, inflight: number, dropped: boolean): void;
}

/** An algorithm that compares latency with a no-load baseline, which it can be given measured without a queue. */
export interface BaselineLimit extends AdaptiveLimit {
  /**
   * Takes `rttMs`, the average latency of requests served with no queue in front of them, as the no-load latency.
   *
   * @param heldLimit - the lowered limit it was measured under, when requests filled it (more were wanted); undefined when they never did
   */
  onBaseline(rttMs: number, heldLimit: number | undefined): void;
}

/** Settings shared by the adaptive algorithms. */
export interface AdaptiveLimitBounds {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
}

/** ⌊log10(n)⌋, at least 1: the step Vegas grows and shrinks by (Netflix's `Log10RootFunction`). */
export function log10Step(n: number): number {
  return n < 1000 ? Math.max(1, Math.floor(Math.log10(Math.max(1, Math.floor(n))))) : Math.floor(Math.sqrt(n));
}
