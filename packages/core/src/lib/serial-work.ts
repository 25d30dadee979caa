/** Work run one piece after another, each once the one before has settled. */
export interface SerialWork {
  /** Queues `work`; its failure is dropped (nobody waits for it). */
  run(work: () => Promise<void>): void;
}

export function createSerialWork(): SerialWork {
  let last: Promise<void> = Promise.resolve();
  return {
    run(work) {
      last = last.then(work).catch(() => undefined);
    },
  };
}
