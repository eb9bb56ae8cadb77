import Redis from 'ioredis';
import { delay } from './wait';

/** Pairs of an `XINFO` reply, as a map. */
function fields(reply: unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), reply[i + 1]);
  return map;
}

/**
 * True when consumer group `group` of `stream` has been handed every entry
 * of the stream and has acknowledged each: what Redis itself says, so a
 * consumer killed before it could report its acknowledgement cannot make
 * the count wrong.
 */
export async function groupCaughtUp(admin: Redis, stream: string, group: string): Promise<boolean> {
  const info = fields((await admin.call('XINFO', 'STREAM', stream)) as unknown[]);
  const groups = (await admin.call('XINFO', 'GROUPS', stream)) as unknown[][];
  const found = groups.map(fields).find((g) => g.get('name') === group);
  return (
    found !== undefined &&
    Number(found.get('pending')) === 0 &&
    found.get('last-delivered-id') === info.get('last-generated-id')
  );
}

/**
 * Waits until {@link groupCaughtUp}, polling every 50 ms of real time (the
 * consumers are other processes); rejects naming the group after `ms`.
 */
export async function untilGroupCaughtUp(admin: Redis, stream: string, group: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await groupCaughtUp(admin, stream, group))) {
    if (Date.now() > deadline) throw new Error(`group '${group}' of '${stream}' not caught up within ${ms} ms`);
    await delay(50);
  }
}
