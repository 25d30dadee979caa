/**
 * A bus subscription read as an async iterable: events wait in a bounded buffer until the
 * reader takes them, and the iteration ends when the signal fires. A reader that falls too far
 * behind is cut off rather than let the buffer grow without bound.
 *
 * @module
 */
import { ResourceExhaustedError } from "../errors.js";
import type { EventBus, EventPayload } from "./event-bus.js";

export interface TopicSubscriptionOptions {
  /** Events held for a slow reader before the subscription fails. Default 1000. */
  readonly maxBuffered?: number;
}

/**
 * Subscribes to `topic` and resolves once the subscription is in effect (later publishes reach
 * it); the returned iterable yields payloads until `signal` fires or the reader stops.
 */
export async function subscribeTopic(
  bus: EventBus,
  topic: string,
  signal: AbortSignal,
  options: TopicSubscriptionOptions = {},
): Promise<AsyncIterable<EventPayload>> {
  const maxBuffered = options.maxBuffered ?? 1000;
  const buffered: EventPayload[] = [];
  let overflowed = false;
  let wake: (() => void) | undefined;
  const unsubscribe = await bus.subscribe(topic, (payload) => {
    if (buffered.length >= maxBuffered) overflowed = true;
    else buffered.push(payload);
    wake?.();
  });
  // Also when the iteration never starts: a caller gone before the first read leaves nothing behind.
  const onAbort = () => {
    unsubscribe();
    wake?.();
  };
  if (signal.aborted) unsubscribe();
  else signal.addEventListener("abort", onAbort, { once: true });

  async function* read(): AsyncGenerator<EventPayload> {
    try {
      while (!signal.aborted) {
        if (overflowed) {
          throw new ResourceExhaustedError(
            `the event stream fell more than ${maxBuffered} events behind; subscribe again`,
            { reason: "EVENT_STREAM_OVERFLOW" },
          );
        }
        const next = buffered.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      unsubscribe();
    }
  }
  return read();
}
