/**
 * Group commit for `Storage.append`. Every issued certificate appends a ledger entry and an audit
 * event; a commit each would make the commit (an fsync on SQLite with synchronous=FULL, a WAL
 * flush on PostgreSQL) the cost of a certificate. Units appended while a batch is being committed
 * wait and go together into the next one; each is acknowledged only once the commit that holds
 * it has returned, so an acknowledged unit is durable.
 *
 * @module
 */

/**
 * Commits `units` in one transaction (together; when one breaks a uniqueness rule, again with each
 * in a savepoint of its own): resolves to one outcome per unit (`undefined` when it was written,
 * else the error that rolled it back alone), or rejects when the transaction as a whole failed and
 * nothing was written.
 */
export type CommitUnits<Unit> = (units: readonly Unit[]) => Promise<ReadonlyArray<unknown>>;

export interface AppendBatcher<Unit> {
  /** Resolves once `unit` is durable; rejects with its own error, or with its batch's. */
  append(unit: Unit): Promise<void>;
  /** Resolves once every unit appended so far has been committed or refused. */
  drain(): Promise<void>;
}

interface Pending<Unit> {
  readonly unit: Unit;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A batcher over `commit`. `maxBatch` bounds how long one transaction holds the database (the
 * write lock on SQLite: other writers wait meanwhile).
 */
export function createAppendBatcher<Unit>(
  commit: CommitUnits<Unit>,
  options: { readonly maxBatch?: number } = {},
): AppendBatcher<Unit> {
  const maxBatch = options.maxBatch ?? 128;
  let queue: Pending<Unit>[] = [];
  let draining: Promise<void> | undefined;

  async function commitBatch(batch: readonly Pending<Unit>[]): Promise<void> {
    let outcomes: ReadonlyArray<unknown>;
    try {
      outcomes = await commit(batch.map((item) => item.unit));
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const error = outcomes[i];
      if (error === undefined) item.resolve();
      else item.reject(error);
    });
  }

  function startDraining(): void {
    if (draining !== undefined) return;
    draining = (async () => {
      try {
        // After the I/O callbacks of this turn, so that requests that arrived together share a batch.
        await new Promise<void>((resolve) => setImmediate(resolve));
        while (queue.length > 0) {
          const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
          queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
          await commitBatch(batch);
        }
      } finally {
        // In the same turn as the last look at the queue: a unit appended after it starts anew.
        draining = undefined;
      }
    })();
  }

  return {
    append(unit) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ unit, resolve, reject });
        startDraining();
      });
    },
    async drain() {
      while (draining !== undefined) await draining;
    },
  };
}
