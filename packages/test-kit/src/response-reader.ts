/** Reading the server's side of a bidirectional stream as the tests do. */
export interface ResponseReader<T extends { msg: { case: string | undefined } }> {
  /** The next message; rejects with the stream's error, or when it ended. */
  next(): Promise<T>;
  /** The next message whose case is not `skipped`. */
  nextExcept(skipped: NonNullable<T["msg"]["case"]>): Promise<T>;
  /** Drains the stream once; resolves with how it ended: undefined for a clean end, else the error. */
  ended(): Promise<unknown>;
}

/** `stream` names the stream in the error thrown when a message is awaited after its end. */
export function responseReader<T extends { msg: { case: string | undefined } }>(
  responses: AsyncIterator<T>,
  stream: string,
): ResponseReader<T> {
  const next = async (): Promise<T> => {
    const result = await responses.next();
    if (result.done) throw new Error(`${stream} ended`);
    return result.value;
  };
  let end: Promise<unknown> | undefined;
  return {
    next,
    async nextExcept(skipped) {
      for (;;) {
        const message = await next();
        if (message.msg.case !== skipped) return message;
      }
    },
    ended() {
      end ??= (async () => {
        try {
          for (;;) {
            const result = await responses.next();
            if (result.done) return undefined;
          }
        } catch (error) {
          return error;
        }
      })();
      return end;
    },
  };
}
