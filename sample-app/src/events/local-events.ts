import { Injectable } from '@nestjs/common';
import { defer, map, Observable } from 'rxjs';

/** A handler of one topic: resolves once the event is applied. */
export type LocalEventHandler = (data: unknown) => Promise<unknown>;

/**
 * The shop's in-process message transport: a `ClientProxy`'s `emit`, with
 * the subscribers in this process. The outbox relay publishes through it as
 * it would through a NATS or RabbitMQ `ClientProxy`; an emit completes once
 * every subscriber has applied the event, and fails when one fails (the
 * relay then retries it).
 */
@Injectable()
export class LocalEvents {
  private readonly handlers = new Map<string, LocalEventHandler[]>();

  /** Delivers every event of `topic` to `handler`. */
  subscribe(topic: string, handler: LocalEventHandler): void {
    this.handlers.set(topic, [...(this.handlers.get(topic) ?? []), handler]);
  }

  /** Delivers `data` to the subscribers of `topic`, when subscribed to. */
  emit(topic: string, data: unknown): Observable<void> {
    return defer(() => Promise.all((this.handlers.get(topic) ?? []).map((handler) => handler(data)))).pipe(
      map(() => undefined),
    );
  }
}
