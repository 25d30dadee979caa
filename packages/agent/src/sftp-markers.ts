/**
 * The markers an sftp login's recording gets from what its session wrapper reports (`f`: one file,
 * `sftp-end`: the listing is over). The wrapper runs as the user who logged in, so a report is
 * checked and bounded here; the agent writes only what these functions make of it.
 *
 * @module
 */

/** Files itemised per login; after that one marker says how many more there were. */
export const sftpMarkerLimits = { files: 10_000, pathChars: 4096, operations: 12 } as const;

const operationPattern =
  /^(open( [a-z,]{1,60})?|read|write|close|remove|rename|mkdir|rmdir|setstat)( failed)?$/;

const count = (n: unknown): number | undefined =>
  Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : undefined;

const path = (p: unknown): string | undefined =>
  typeof p === "string" && p.length <= sftpMarkerLimits.pathChars + 1 ? JSON.stringify(p) : undefined;

interface SftpTotals {
  files: number;
  bytesRead: number;
  bytesWritten: number;
}

/**
 * `sftp "<path>": read <n> bytes, written <m> bytes (open read, read, close)`; undefined for a
 * report that is not one.
 */
function fileMarker(report: Record<string, unknown>, totals: SftpTotals): string | undefined {
  const name = path(report.path);
  const bytesRead = count(report.bytesRead);
  const bytesWritten = count(report.bytesWritten);
  const operations = report.operations;
  if (name === undefined || bytesRead === undefined || bytesWritten === undefined) return undefined;
  if (!Array.isArray(operations) || operations.length > sftpMarkerLimits.operations) return undefined;
  if (!operations.every((op) => typeof op === "string" && operationPattern.test(op))) return undefined;
  const renamedTo = report.renamedTo === undefined ? undefined : path(report.renamedTo);
  if (report.renamedTo !== undefined && renamedTo === undefined) return undefined;
  totals.files++;
  totals.bytesRead += bytesRead;
  totals.bytesWritten += bytesWritten;
  const moved = [
    ...(bytesRead > 0 || operations.includes("read") ? [`read ${bytesRead} bytes`] : []),
    ...(bytesWritten > 0 || operations.includes("write") ? [`written ${bytesWritten} bytes`] : []),
    ...(renamedTo !== undefined ? [`renamed to ${renamedTo}`] : []),
  ];
  return `sftp ${name}: ${moved.length > 0 ? `${moved.join(", ")} ` : ""}(${operations.join(", ")})`;
}

/** The last sftp marker: the totals, and why the listing stopped early if it did. */
function endMarker(report: Record<string, unknown>, totals: SftpTotals): string {
  const failed =
    typeof report.failed === "string"
      ? `; the listing stopped early (${report.failed.slice(0, 200).replace(/[^\x20-\x7e]/g, "?")}), the transfer went on`
      : "";
  return `sftp: ${totals.files} files, ${totals.bytesRead} bytes read, ${totals.bytesWritten} bytes written${failed}`;
}

/** The markers of one login's reports: at most {@link sftpMarkerLimits.files} files, then the end. */
export class SftpMarkers {
  readonly #totals: SftpTotals = { files: 0, bytesRead: 0, bytesWritten: 0 };
  #ended = false;

  /** The markers to write for one report (none for one that is not, or after the end). */
  report(report: Record<string, unknown>): string[] {
    if (this.#ended) return [];
    if (report.type === "sftp-end") {
      this.#ended = true;
      const more = this.#totals.files - sftpMarkerLimits.files;
      return [
        ...(more > 0 ? [`sftp: ${more} more files were not itemised`] : []),
        endMarker(report, this.#totals),
      ];
    }
    const itemised = this.#totals.files < sftpMarkerLimits.files;
    const marker = fileMarker(report, this.#totals);
    return marker !== undefined && itemised ? [marker] : [];
  }
}
