/**
 * Group commit for issuance records. Every certificate writes a ledger entry and an audit event;
 * one transaction each would make the commit (an fsync on SQLite with synchronous=FULL, a WAL
 * flush on PostgreSQL) the cost of a certificate. Writes submitted while a batch is being written
 * wait and go together into the next transaction; each write is acknowledged only once the
 * transaction that holds it has committed, so an acknowledged certificate is on disk.
 *
 * Each write runs in its own nested transaction (a savepoint) inside the batch: one that fails
 * (a serial taken by a racing instance) is rolled back alone and its caller alone sees the error.
 * A failed commit fails every write of the batch.
 *
 * @module
 */
import type { Repositories, Storage } from "../../storage/storage.js";

/** Collects writes into shared transactions. */
export interface WriteBatcher {
  /**
   * Runs `write` in the next batch transaction on `storage`; resolves once it has committed.
   * Call it outside any transaction: the batch is a transaction of its own.
   */
  write(storage: Storage, write: (tx: Repositories) => Promise<void>): Promise<void>;
}

interface Pending {
  readonly storage: Storage;
  readonly write: (tx: Repositories) => Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Creates a batcher. `maxBatch` bounds how long one transaction holds the database (SQLite has
 * a single connection: nothing else runs meanwhile).
 */
export function createWriteBatcher(options: { readonly maxBatch?: number } = {}): WriteBatcher {
  const maxBatch = options.maxBatch ?? 128;
  let queue: Pending[] = [];
  let scheduled = false;

  async function runBatch(batch: readonly Pending[]): Promise<void> {
    const outcomes: Array<{ ok: true } | { ok: false; error: unknown }> = [];
    try {
      await batch[0]!.storage.transaction(async () => {
        for (const item of batch) {
          try {
            await item.storage.transaction(item.write);
            outcomes.push({ ok: true });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve();
      else item.reject(outcome.error);
    });
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        await runBatch(batch);
      }
    } finally {
      scheduled = false;
    }
  }

  return {
    write(storage, write) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ storage, write, resolve, reject });
        if (scheduled) return;
        scheduled = true;
        // After the I/O callbacks of this turn, so requests that arrived together share a batch.
        setImmediate(() => void drain());
      });
    },
  };
}
