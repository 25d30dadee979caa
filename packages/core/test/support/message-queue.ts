/**
 * A client's side of a stream in a test: messages go out as the test sends them, and the stream
 * ends or fails when the test says.
 *
 * @module
 */

export interface MessageQueue<T> {
  readonly messages: AsyncIterable<T>;
  send(message: T): void;
  /** The client closes its side. */
  end(): void;
  /** Reading the client's messages fails with `error`. */
  fail(error: unknown): void;
}

export function messageQueue<T>(): MessageQueue<T> {
  const queue: T[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const messages = (async function* () {
    for (;;) {
      if (queue.length > 0) yield queue.shift() as T;
      else if (failure !== undefined) throw failure;
      else if (ended) return;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  })();
  return {
    messages,
    send(message) {
      queue.push(message);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    fail(error) {
      failure = error;
      wake?.();
    },
  };
}

/** The messages of a stream being opened, read as one iterator: its refusal comes on the first read. */
export async function* whenOpened<T>(opening: Promise<AsyncIterable<T>>): AsyncGenerator<T> {
  yield* await opening;
}
