import { NatsContext, RmqContext } from '@nestjs/microservices';
import { headers } from 'nats';
import { outboxEventId } from './outbox-event-id';
import { NO_EVENT_ID } from './outbox.messages';
import { OUTBOX_EVENT_ID_HEADER } from './outbox-transport';
import { readStreamEntry, RedisStreamsContext, streamEntryFields } from './redis-streams-message';

const envelope = (id: string) => ({ outbox: 1, id, topic: 't', key: null, payload: {}, headers: {}, occurredAt: 0 });

function natsContext(id?: string): NatsContext {
  const carried = headers();
  if (id !== undefined) carried.set(OUTBOX_EVENT_ID_HEADER, id);
  return new NatsContext(['orders', carried]);
}

function rmqContext(properties: object): RmqContext {
  return new RmqContext([{ content: Buffer.from('{}'), fields: {}, properties }, {}, 't']);
}

describe('outboxEventId', () => {
  it('reads the envelope among the arguments', () => {
    expect(outboxEventId('other', envelope('e-1'))).toBe('e-1');
  });

  it("reads the NATS header, before the envelope's id", () => {
    expect(outboxEventId(envelope('in-body'), natsContext('in-header'))).toBe('in-header');
    expect(outboxEventId({ plain: true }, natsContext('in-header'))).toBe('in-header');
  });

  it("reads the RabbitMQ header, before the envelope's id", () => {
    expect(outboxEventId(envelope('in-body'), rmqContext({ headers: { [OUTBOX_EVENT_ID_HEADER]: 'in-header' } }))).toBe(
      'in-header',
    );
  });

  it('reads the event id of a Redis Streams context, before the envelope', () => {
    const context = new RedisStreamsContext('orders', '1-0', 'in-entry', 'order.created', false);
    expect(outboxEventId(envelope('in-body'), context)).toBe('in-entry');
    expect(outboxEventId(context)).toBe('in-entry');
    const foreign = new RedisStreamsContext('orders', '1-0', undefined, 'order.created', false);
    expect(outboxEventId(envelope('in-body'), foreign)).toBe('in-body');
  });

  it('reads back, from a stream entry, the id, the topic and the envelope a publisher wrote', () => {
    const event = {
      id: 'e-9',
      topic: 'order.created',
      key: 'k',
      payload: { n: 1 },
      headers: { h: 'v' },
      occurredAt: 5,
    };
    expect(readStreamEntry(streamEntryFields(event))).toEqual({
      eventId: 'e-9',
      topic: 'order.created',
      data: { outbox: 1, ...event },
    });
    expect(readStreamEntry(['note', 'hello'])).toEqual({
      eventId: undefined,
      topic: undefined,
      data: { note: 'hello' },
    });
  });

  it('falls back to the envelope when the context has no such header', () => {
    expect(outboxEventId(envelope('in-body'), natsContext())).toBe('in-body');
    expect(outboxEventId(envelope('in-body'), rmqContext({ messageId: 'not-ours', headers: {} }))).toBe('in-body');
    expect(outboxEventId(envelope('in-body'), rmqContext({}))).toBe('in-body');
  });

  it('throws, naming what it was given, when no argument carries an id', () => {
    expect(() => outboxEventId({ plain: true }, natsContext())).toThrow(NO_EVENT_ID([{}, {}]));
    expect(() => outboxEventId(null, 'x')).toThrow(/\(null, string\).*'outbox-event-id' header/);
  });
});
