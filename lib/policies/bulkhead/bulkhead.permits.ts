/** @internal What a bulkhead's Observable operator asks of it: permits, and places in its queue. */
export interface PermitSource {
  tryEnter(): number;
  exit(started: number): void;
  entered(): number;
  queueForPermit(grant: () => void, fail: (error: unknown) => void): object;
  leaveQueue(place: object): void;
  cancelled(error: DOMException): unknown;
}
