/**
 * A FIFO async mutex: one holder at a time, waiters in arrival order.
 *
 * @module
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn);
    // The next holder waits for this one to settle, whatever the outcome.
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
