/**
 * The event bus: how one server instance tells the others that something happened (a daemon's
 * principals changed, a session must be pushed, a workspace event occurred). Events are small
 * JSON notifications, delivered at most once to every subscriber of their topic on every
 * instance; anything that must not be lost is in storage, and the event only says "look".
 *
 * @module
 */

/** A JSON value carried by an event. */
export type EventPayload =
  | null
  | boolean
  | number
  | string
  | EventPayload[]
  | { [key: string]: EventPayload };

/** Called for each event on a subscribed topic. Errors it throws are reported, not propagated. */
export type EventHandler = (payload: EventPayload, topic: string) => void;

export interface EventBus {
  /** Delivers `payload` to every current subscriber of `topic`, on every instance. */
  publish(topic: string, payload: EventPayload): Promise<void>;
  /** Subscribes; resolves once delivery is guaranteed for later publishes. Returns the unsubscribe function. */
  subscribe(topic: string, handler: EventHandler): Promise<() => void>;
  close(): Promise<void>;
}

/** Largest serialised event; PostgreSQL NOTIFY payloads are limited to 8000 bytes. */
export const maxEventBytes = 7_900;

/** Rejects events that some bus implementations could not carry, so all behave the same. */
export function encodeEvent(topic: string, payload: EventPayload): string {
  const text = JSON.stringify({ t: topic, p: payload });
  if (Buffer.byteLength(text) > maxEventBytes) {
    throw new RangeError(
      `event on ${topic} is ${Buffer.byteLength(text)} bytes; the bus carries at most ${maxEventBytes}`,
    );
  }
  return text;
}

/** Topic -> handlers, shared by the implementations for local fan-out. */
export function createSubscriberTable(
  onHandlerError: (error: unknown, topic: string) => void = () => undefined,
) {
  const handlers = new Map<string, Set<EventHandler>>();
  return {
    add(topic: string, handler: EventHandler): () => void {
      const set = handlers.get(topic) ?? new Set<EventHandler>();
      handlers.set(topic, set);
      set.add(handler);
      return () => {
        set.delete(handler);
        if (set.size === 0) handlers.delete(topic);
      };
    },
    deliver(topic: string, payload: EventPayload): void {
      for (const handler of handlers.get(topic) ?? []) {
        try {
          handler(payload, topic);
        } catch (error) {
          onHandlerError(error, topic);
        }
      }
    },
    clear: () => handlers.clear(),
  };
}

/** The bus of a single process (the embedded SQLite default): delivery is a function call. */
export function createInProcessEventBus(
  options: { onHandlerError?: (error: unknown, topic: string) => void } = {},
): EventBus {
  const table = createSubscriberTable(options.onHandlerError);
  return {
    async publish(topic, payload) {
      encodeEvent(topic, payload);
      // Asynchronous like every other bus, so publishers never run subscriber code inline.
      queueMicrotask(() => table.deliver(topic, payload));
    },
    async subscribe(topic, handler) {
      return table.add(topic, handler);
    },
    async close() {
      table.clear();
    },
  };
}
