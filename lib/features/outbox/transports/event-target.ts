import { invalidOption, OptionReader } from '../../../config/option-readers';
import { OutboxEvent } from '../outbox.types';
import { NO_TARGET } from './transport.messages';

/** Where a durable publisher sends an event: a fixed name, or one chosen per event. */
export type OutboxEventTarget = string | ((event: OutboxEvent) => string);

/** Reads an {@link OutboxEventTarget} option: a non-empty string or a function. */
export const eventTargetOption: OptionReader<OutboxEventTarget> = (value, place, key) =>
  (typeof value === 'string' && value !== '') || typeof value === 'function'
    ? (value as OutboxEventTarget)
    : invalidOption(place, key, 'a non-empty string or a function (event) => string', value);

/** The target of each event: `target` (the topic when not given), checked each time when it is a function. */
export function targetOf(
  target: OutboxEventTarget | undefined,
  place: string,
  key: string,
): (event: OutboxEvent) => string {
  if (typeof target === 'string') return () => target;
  if (target === undefined) return (event) => event.topic;
  return (event) => {
    const chosen: unknown = target(event);
    if (typeof chosen !== 'string' || chosen === '') throw new Error(NO_TARGET(place, key, event.topic, chosen));
    return chosen;
  };
}
