/**
 * The audit export: a workspace's EventLog entries of a time window as one CSV or JSON file.
 *
 * The answer is one `bytes` message, so the file is necessarily held once; nothing else grows
 * with the window. Rows are read in keyset pages (oldest first) and each page is serialised, a
 * few dozen rows at a time, straight into one growing byte buffer, sized from the row count and
 * the first page, so memory stays at about the size of the file plus one page, never a million
 * row objects.
 *
 * @module
 */
import { ResourceExhaustedError } from "../errors.js";
import type { AuditEventRecord } from "../storage/audit.js";
import type { Repositories } from "../storage/storage.js";
import type { AuditNamer, AuditNames } from "./names.js";

/** Size limits of one export. */
export interface AuditExportOptions {
  /** Most events one export may hold. Default 1,000,000. */
  readonly maxRows?: number;
  /** Most bytes one export file may have. Default 512 MiB. */
  readonly maxBytes?: number;
  /**
   * Rows read per storage round trip. Default 500: the rows of a larger page live long enough to
   * be promoted to the old generation, where they pile up until a full collection (a million-row
   * export then peaked 100 MB higher, one run in two).
   */
  readonly pageSize?: number;
}

export const defaultAuditExportOptions: Required<AuditExportOptions> = Object.freeze({
  maxRows: 1_000_000,
  maxBytes: 512 * 1024 * 1024,
  pageSize: 500,
});

export type AuditExportFormat = "csv" | "json";

/** The columns of both formats: the EventLog record, in its field order (names beside ids). */
export const eventLogColumns = [
  "id",
  "workspaceId",
  "actorId",
  "actorType",
  "action",
  "ipAddress",
  "userAgent",
  "statusCode",
  "timestamp",
  "resource",
  "actorName",
  "actorEmail",
  "resourceName",
] as const;

/** A row and the names beside its ids. */
interface NamedEvent {
  readonly e: AuditEventRecord;
  readonly n: AuditNames;
}

const noNames: AuditNames = { actorName: "", actorEmail: "", resourceName: "" };

// --- serialisation ---------------------------------------------------------------------------

/**
 * One CSV field (RFC 4180). A field a spreadsheet would run as a formula (starting with = + - @,
 * tab or CR; user agents are chosen by whoever sends the request) gets a leading `'`.
 */
function csvField(value: string): string {
  let field = value;
  if (/^[=+\-@\t\r]/.test(field)) field = `'${field}`;
  return /[",\r\n]/.test(field) ? `"${field.replaceAll('"', '""')}"` : field;
}

function csvRow({ e, n }: NamedEvent): string {
  return `${[
    e.id,
    e.workspaceId ?? "",
    e.actorId,
    e.actorType,
    e.action,
    e.ipAddress,
    e.userAgent,
    e.statusCode,
    e.timestamp.toISOString(),
    e.resource,
    n.actorName,
    n.actorEmail,
    n.resourceName,
  ]
    .map(csvField)
    .join(",")}\r\n`;
}

function jsonRow({ e, n }: NamedEvent): string {
  return JSON.stringify({
    id: e.id,
    workspaceId: e.workspaceId ?? "",
    actorId: e.actorId,
    actorType: e.actorType,
    action: e.action,
    ipAddress: e.ipAddress,
    userAgent: e.userAgent,
    statusCode: e.statusCode,
    timestamp: e.timestamp.toISOString(),
    resource: e.resource,
    actorName: n.actorName,
    actorEmail: n.actorEmail,
    resourceName: n.resourceName,
  });
}

const formats = {
  csv: {
    contentType: "text/csv; charset=utf-8",
    extension: "csv",
    head: `${eventLogColumns.join(",")}\r\n`,
    row: (e: NamedEvent, _first: boolean) => csvRow(e),
    tail: "",
  },
  json: {
    contentType: "application/json",
    extension: "json",
    head: "[",
    // One event per line, comma-separated: a JSON array that line-oriented tools can also split.
    row: (e: NamedEvent, first: boolean) => (first ? "\n" : ",\n") + jsonRow(e),
    tail: "\n]\n",
  },
} as const;

/**
 * The text of `rows` in slices of {@link rowsPerSlice}. A whole page as one string (hundreds of
 * kilobytes) would be allocated straight into the old generation, where the strings of every
 * page pile up until a full collection: a tenth of a gigabyte at a million rows. Slices of a few
 * kilobytes die young and cheaply.
 */
function serialise(
  rows: readonly NamedEvent[],
  first: boolean,
  row: (e: NamedEvent, first: boolean) => string,
): string[] {
  const texts: string[] = [];
  for (let start = 0; start < rows.length; start += rowsPerSlice) {
    let text = "";
    const end = Math.min(rows.length, start + rowsPerSlice);
    for (let i = start; i < end; i++) text += row(rows[i]!, first && i === 0);
    texts.push(text);
  }
  return texts;
}

const rowsPerSlice = 64;

// --- the growing buffer ------------------------------------------------------------------------

/** Bytes appended in place; grows by half when full, trimmed only when much is left unused. */
class ByteSink {
  private buffer: Buffer;
  private length = 0;

  constructor(
    capacity: number,
    private readonly maxBytes: number,
    private readonly tooLarge: () => Error,
  ) {
    this.buffer = Buffer.allocUnsafe(Math.max(1024, Math.min(capacity, maxBytes)));
  }

  get size(): number {
    return this.length;
  }

  /** Makes room for `bytes` more, at least; `hint` is the expected final size. */
  reserve(bytes: number, hint = 0): void {
    const needed = this.length + bytes;
    if (needed > this.maxBytes) throw this.tooLarge();
    if (needed <= this.buffer.length) return;
    const grown = Math.min(this.maxBytes, Math.max(needed, hint, Math.ceil(this.buffer.length * 1.5)));
    const next = Buffer.allocUnsafe(grown);
    this.buffer.copy(next, 0, 0, this.length);
    this.buffer = next;
  }

  write(text: string, hint = 0): void {
    if (text === "") return;
    this.reserve(Buffer.byteLength(text, "utf8"), hint);
    this.length += this.buffer.write(text, this.length, "utf8");
  }

  /** The bytes written. Copied into an exact buffer only when over a quarter would go unused. */
  finish(): Uint8Array {
    if (this.buffer.length - this.length > this.length / 4) {
      const exact = Buffer.allocUnsafe(this.length);
      this.buffer.copy(exact, 0, 0, this.length);
      return exact;
    }
    return this.buffer.subarray(0, this.length);
  }
}

// --- the export ------------------------------------------------------------------------------

export interface AuditExport {
  readonly data: Uint8Array;
  readonly rows: number;
  readonly contentType: string;
  readonly extension: string;
}

/**
 * Writes the events of `[since, until)` (oldest first) as one file. Throws
 * ResourceExhaustedError (`AUDIT_EXPORT_TOO_LARGE`) before reading a row when the window holds
 * more than `maxRows` events, and as soon as the file would pass `maxBytes`. With `namer`, each
 * row carries the names of its actor and resource; without, those columns are empty.
 */
export async function exportAuditLog(
  storage: Pick<Repositories, "auditEvents">,
  workspaceId: string,
  window: { readonly since?: Date; readonly until?: Date },
  format: AuditExportFormat,
  options: AuditExportOptions = {},
  namer?: AuditNamer,
): Promise<AuditExport> {
  const limits = { ...defaultAuditExportOptions, ...options };
  const shape = formats[format];
  const total = await storage.auditEvents.count(workspaceId, window);
  if (total > limits.maxRows) {
    throw new ResourceExhaustedError(
      `the export would hold ${total} events; one export holds at most ${limits.maxRows}: narrow the date range`,
      { reason: "AUDIT_EXPORT_TOO_LARGE" },
    );
  }
  const tooLarge = () =>
    new ResourceExhaustedError(
      `the export would be larger than ${limits.maxBytes} bytes: narrow the date range`,
      { reason: "AUDIT_EXPORT_TOO_LARGE" },
    );
  const sink = new ByteSink(64 * 1024, limits.maxBytes, tooLarge);
  sink.write(shape.head);
  let after: string | undefined;
  let rows = 0;
  let estimate = 0;
  for (;;) {
    const page = await storage.auditEvents.scan(workspaceId, {
      ...window,
      limit: limits.pageSize,
      ...(after === undefined ? {} : { after }),
    });
    if (page.items.length > 0) {
      const named = await Promise.all(
        page.items.map(async (e) => ({ e, n: namer ? await namer(e) : noNames })),
      );
      const texts = serialise(named, rows === 0, shape.row);
      if (rows === 0) {
        // Size the buffer once from the first page: later pages rarely need it to grow.
        const perRow = texts.reduce((n, text) => n + Buffer.byteLength(text, "utf8"), 0) / page.items.length;
        estimate = Math.ceil(
          sink.size + perRow * Math.max(total, page.items.length) * 1.05 + shape.tail.length,
        );
      }
      for (const text of texts) sink.write(text, estimate);
      rows += page.items.length;
    }
    if (page.next === null) break;
    after = page.next;
  }
  sink.write(shape.tail);
  return { data: sink.finish(), rows, contentType: shape.contentType, extension: shape.extension };
}
