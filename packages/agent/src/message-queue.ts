/**
 * Flow control for a session's output: an async-iterable queue of outgoing messages that counts
 * the bytes it holds (so the pty is paused while the server is slower than the shell), and a
 * token bucket that keeps the output within the agreed rate.
 *
 * @module
 */

/** An async-iterable queue of outgoing messages, counting the stdout bytes it holds. */
export class MessageQueue<T extends { msg: { value?: unknown } }> {
  #items: T[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #idle = false;
  #drainedWaiters: Array<() => void> = [];
  bytes = 0;

  push(item: T): void {
    if (this.#ended) return;
    this.#items.push(item);
    this.bytes += sizeOf(item);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
    this.#notifyDrained();
  }

  /** Settles once everything pushed so far has been taken (and the consumer asked for more). */
  drained(): Promise<void> {
    if (this.#items.length === 0 && this.#idle) return Promise.resolve();
    return new Promise((resolve) => this.#drainedWaiters.push(resolve));
  }

  #notifyDrained(): void {
    for (const resolve of this.#drainedWaiters.splice(0)) resolve();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        this.bytes -= sizeOf(item);
        yield item;
        continue;
      }
      if (this.#ended) return;
      this.#idle = true;
      this.#notifyDrained();
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#idle = false;
      this.#wake = undefined;
    }
  }
}

function sizeOf(item: { msg: { value?: unknown } }): number {
  return item.msg.value instanceof Uint8Array ? item.msg.value.length : 0;
}

/** `rate` bytes per second with a burst of `burst`. */
export class TokenBucket {
  #tokens: number;
  #at = Date.now();
  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.#tokens = burst;
  }

  async take(n: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) / 1000) * this.rate);
      this.#at = now;
      if (this.#tokens >= n || signal.aborted) {
        this.#tokens -= n;
        return;
      }
      await sleep(Math.ceil(((n - this.#tokens) / this.rate) * 1000), signal);
    }
  }
}

/** Waits `ms`, or less if `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
