import {
  BAD_REPLAY_OPTION,
  EMPTY_REPLAY_SELECTION,
  REPLAY_NOT_AN_OBJECT,
  UNKNOWN_REPLAY_OPTION,
} from './outbox.messages';
import { OutboxReplaySelection } from './outbox-store';

/** What {@link Outbox.replay} re-sends: sent events matching every condition given (at least one). */
export interface OutboxReplayOptions {
  /** Only these event ids. */
  ids?: readonly string[];
  /** Only events of this topic. */
  topic?: string;
  /** Only events added at or after this time: a `Date`, ms since the epoch, or an ISO 8601 string. */
  since?: Date | number | string;
}

const KNOWN = ['ids', 'topic', 'since'];

/** Validates the argument of `Outbox.replay` (or the replay route's body), naming what is wrong. */
export function readReplaySelection(raw: unknown): OutboxReplaySelection {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(REPLAY_NOT_AN_OBJECT(raw));
  const given = raw as Record<string, unknown>;
  const unknown = Object.keys(given).find((key) => !KNOWN.includes(key));
  if (unknown !== undefined) throw new Error(UNKNOWN_REPLAY_OPTION(unknown, KNOWN));
  const { ids, topic, since } = given;
  if (ids === undefined && topic === undefined && since === undefined) throw new Error(EMPTY_REPLAY_SELECTION());
  if (
    ids !== undefined &&
    !(Array.isArray(ids) && ids.length > 0 && ids.every((id) => typeof id === 'string' && id !== ''))
  )
    throw new Error(BAD_REPLAY_OPTION('ids', 'a non-empty array of non-empty strings', ids));
  if (topic !== undefined && (typeof topic !== 'string' || topic === ''))
    throw new Error(BAD_REPLAY_OPTION('topic', 'a non-empty string', topic));
  return {
    ...(ids === undefined ? {} : { ids: ids as string[] }),
    ...(topic === undefined ? {} : { topic }),
    ...(since === undefined ? {} : { since: timeOf(since) }),
  };
}

function timeOf(since: unknown): number {
  const ms =
    since instanceof Date
      ? since.getTime()
      : typeof since === 'number'
        ? since
        : typeof since === 'string' && /^\d{4}-\d{2}-\d{2}/.test(since)
          ? Date.parse(since)
          : Number.NaN;
  if (!Number.isFinite(ms))
    throw new Error(BAD_REPLAY_OPTION('since', 'a Date, a time in ms since the epoch or an ISO 8601 string', since));
  return ms;
}
