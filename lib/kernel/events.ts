/** Call it to stop receiving events. */
export type Unsubscribe = () => void;

/** A typed event subscription: pass a listener, get back an {@link Unsubscribe}. */
export type EventSubscriber<T> = (listener: (event: T) => void) => Unsubscribe;

/**
 * A minimal typed event stream. Emitters check {@link EventStream.active}
 * before building an event object, so an unobserved event costs one branch.
 */
export class EventStream<T> {
  private listeners: Array<(event: T) => void> = [];

  /** True when at least one listener is subscribed. */
  active = false;

  /** Subscribes a listener; the returned function unsubscribes it. */
  readonly subscribe: EventSubscriber<T> = (listener) => {
    this.listeners = [...this.listeners, listener];
    this.active = true;
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
      this.active = this.listeners.length > 0;
    };
  };

  /** Delivers `event` to every listener; a throwing listener does not stop the others or the call. */
  emit(event: T): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // a broken listener must never change the outcome of a protected call
      }
    }
  }
}
