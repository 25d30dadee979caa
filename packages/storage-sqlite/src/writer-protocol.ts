/**
 * The messages between `Storage.append` (append-writer.ts) and its writer thread
 * (writer-thread.js), typed once for both sides.
 *
 * @module
 */

/** What the thread is started with. */
export interface WriterData {
  readonly filename: string;
  readonly busyTimeoutMs: number;
}

/** A driver error as the thread reports it: what the dialect needs to classify it. */
export interface ReportedError {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
}

/** One unit's statements: [statement number, parameters, statement number, parameters, ...]. */
export type EncodedUnit = readonly unknown[];

export type WriterRequest =
  | "close"
  | {
      readonly id: number;
      readonly units: readonly EncodedUnit[];
      /** SQL texts the thread has not been sent yet; they take the next statement numbers. */
      readonly newTexts?: readonly string[];
    };

export type WriterReply =
  | { readonly id: number; readonly outcomes: ReadonlyArray<ReportedError | null> }
  | { readonly id: number; readonly failure: ReportedError };
