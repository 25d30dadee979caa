/**
 * The chain export file: a stretch of a workspace's audit chain (the hash it starts from, its
 * entries, the checkpoints signed over it) as JSON or CSV, written by the server and read back by
 * `wap audit verify`, which checks it offline against the workspace's public key.
 *
 * Values are written exactly as they were hashed. The CSV therefore does not guard fields that a
 * spreadsheet would run as formulas, as the audit log's own CSV export does: it is evidence to
 * verify, not a sheet to open.
 *
 * @module
 */
import { chainedFields, findChainBreak } from "./chain.js";
import { checkpointMessage, checkpointVerifies } from "./checkpoint.js";

/** One entry of the file: the fields the hash covers, its position and hashes (hex). */
export interface ChainFileEntry {
  readonly position: number;
  readonly previousHash: string;
  readonly hash: string;
  readonly id: string;
  readonly workspaceId: string;
  readonly timestamp: string;
  readonly actorType: string;
  readonly actorId: string;
  readonly action: string;
  readonly resource: string;
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly statusCode: string;
  readonly requestId: string;
}

export interface ChainFileCheckpoint {
  readonly position: number;
  readonly hash: string;
  readonly signedAt: string;
  /** Base64 of the Ed25519 signature. */
  readonly signature: string;
}

export interface ChainFile {
  readonly workspaceId: string;
  /** The position and hash of the entry before the first (0 and zeros from the chain's start). */
  readonly start: { readonly position: number; readonly hash: string };
  readonly entries: readonly ChainFileEntry[];
  readonly checkpoints: readonly ChainFileCheckpoint[];
}

export const chainFileFormat = "wap-audit-chain-v1";

/** The CSV's columns; `record` is `start`, `entry` or `checkpoint`. */
export const chainCsvColumns = [
  "record",
  "position",
  "previousHash",
  "hash",
  ...chainedFields,
  "signedAt",
  "signature",
] as const;

// --- writing -----------------------------------------------------------------------------------

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

function csvLine(values: Partial<Record<(typeof chainCsvColumns)[number], string | number>>): string {
  return `${chainCsvColumns.map((c) => csvField(String(values[c] ?? ""))).join(",")}\r\n`;
}

/**
 * Writes a file piece by piece (the export writes its entries a page at a time, never holding
 * them all): `head`, then each entry, then `tail` with the checkpoints.
 */
export interface ChainFileWriter {
  head(workspaceId: string, start: ChainFile["start"]): string;
  /** `first`: the file's first entry. */
  entry(entry: ChainFileEntry, first: boolean): string;
  tail(workspaceId: string, checkpoints: readonly ChainFileCheckpoint[]): string;
}

const csvWriter: ChainFileWriter = {
  head: (workspaceId, start) =>
    `${chainCsvColumns.join(",")}\r\n${csvLine({ record: "start", workspaceId, ...start })}`,
  entry: (entry) => csvLine({ record: "entry", ...entry }),
  tail: (workspaceId, checkpoints) =>
    checkpoints.map((c) => csvLine({ record: "checkpoint", workspaceId, ...c })).join(""),
};

// One entry or checkpoint per line: a JSON document that line-oriented tools can also split.
const jsonWriter: ChainFileWriter = {
  head: (workspaceId, start) =>
    `{\n  "format": ${JSON.stringify(chainFileFormat)},\n` +
    `  "workspaceId": ${JSON.stringify(workspaceId)},\n` +
    `  "start": ${JSON.stringify(start)},\n  "entries": [`,
  entry: (entry, first) => `${first ? "\n" : ",\n"}    ${JSON.stringify(entry)}`,
  tail: (_workspaceId, checkpoints) =>
    `\n  ],\n  "checkpoints": [\n${checkpoints.map((c) => `    ${JSON.stringify(c)}`).join(",\n")}\n  ]\n}\n`,
};

export function chainFileWriter(format: "json" | "csv"): ChainFileWriter {
  return format === "csv" ? csvWriter : jsonWriter;
}

/** The file's text, in `format`. */
export function writeChainFile(file: ChainFile, format: "json" | "csv"): string {
  const writer = chainFileWriter(format);
  let text = writer.head(file.workspaceId, file.start);
  file.entries.forEach((entry, i) => {
    text += writer.entry(entry, i === 0);
  });
  return text + writer.tail(file.workspaceId, file.checkpoints);
}

// --- reading -----------------------------------------------------------------------------------

/** A file that is not a chain export (or not one this version reads). */
export class ChainFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChainFileError";
  }
}

/** RFC 4180 rows. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

const isString = (v: unknown): v is string => typeof v === "string";
const isPosition = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

function entryOf(value: unknown, where: string): ChainFileEntry {
  const e = value as Record<string, unknown> | null;
  if (typeof e !== "object" || e === null || !isPosition(e.position)) {
    throw new ChainFileError(`${where}: not an entry`);
  }
  for (const name of ["previousHash", "hash", ...chainedFields] as const) {
    if (!isString(e[name])) throw new ChainFileError(`${where}: "${name}" must be a string`);
  }
  return e as unknown as ChainFileEntry;
}

function checkpointOf(value: unknown, where: string): ChainFileCheckpoint {
  const c = value as Record<string, unknown> | null;
  if (typeof c !== "object" || c === null || !isPosition(c.position)) {
    throw new ChainFileError(`${where}: not a checkpoint`);
  }
  for (const name of ["hash", "signedAt", "signature"] as const) {
    if (!isString(c[name])) throw new ChainFileError(`${where}: "${name}" must be a string`);
  }
  return c as unknown as ChainFileCheckpoint;
}

function fromJson(text: string): ChainFile {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new ChainFileError(`not JSON: ${(error as Error).message}`);
  }
  if (doc?.format !== chainFileFormat) throw new ChainFileError(`not a ${chainFileFormat} file`);
  const start = doc.start as Record<string, unknown> | undefined;
  if (!isString(doc.workspaceId) || !isPosition(start?.position) || !isString(start?.hash)) {
    throw new ChainFileError("the file names no workspace or start");
  }
  if (!Array.isArray(doc.entries) || !Array.isArray(doc.checkpoints)) {
    throw new ChainFileError("the file has no entries or checkpoints list");
  }
  return {
    workspaceId: doc.workspaceId,
    start: { position: start.position, hash: start.hash },
    entries: doc.entries.map((e, i) => entryOf(e, `entries[${i}]`)),
    checkpoints: doc.checkpoints.map((c, i) => checkpointOf(c, `checkpoints[${i}]`)),
  };
}

function fromCsv(text: string): ChainFile {
  const [header, ...rows] = parseCsv(text);
  if (header?.join(",") !== chainCsvColumns.join(","))
    throw new ChainFileError("not a chain CSV: unknown columns");
  let start: ChainFile["start"] | undefined;
  let workspaceId: string | undefined;
  const entries: ChainFileEntry[] = [];
  const checkpoints: ChainFileCheckpoint[] = [];
  rows.forEach((row, i) => {
    const record = Object.fromEntries(chainCsvColumns.map((c, k) => [c, row[k] ?? ""])) as Record<
      string,
      string
    >;
    const position = /^\d{1,15}$/.test(record.position ?? "") ? Number(record.position) : -1;
    const where = `line ${i + 2}`;
    if (record.record === "start") {
      start = { position, hash: record.hash ?? "" };
      workspaceId = record.workspaceId;
    } else if (record.record === "entry") entries.push(entryOf({ ...record, position }, where));
    else if (record.record === "checkpoint") checkpoints.push(checkpointOf({ ...record, position }, where));
    else throw new ChainFileError(`${where}: unknown record "${record.record}"`);
  });
  if (start === undefined || workspaceId === undefined || !isPosition(start.position)) {
    throw new ChainFileError("the file has no start record");
  }
  return { workspaceId, start, entries, checkpoints };
}

/** Reads a chain export, JSON or CSV (told apart by their first character). */
export function readChainFile(text: string): ChainFile {
  return text.trimStart().startsWith("{") ? fromJson(text) : fromCsv(text);
}

// --- verifying ---------------------------------------------------------------------------------

/** The first thing wrong with a file, or nothing. */
export type ChainVerdict =
  | { readonly ok: true; readonly entries: number; readonly checkpoints: number; readonly last: number }
  | {
      readonly ok: false;
      /** The position of the first bad entry (or of the forged checkpoint). */
      readonly position: number;
      /** The entry's id, when the file holds it. */
      readonly id?: string;
      readonly problem:
        | "edited"
        | "missing"
        | "out_of_place"
        | "forged_checkpoint"
        | "checkpoint_mismatch"
        | "unsigned"
        | "foreign_entry";
      readonly message: string;
    };

const hexPattern = /^[0-9a-f]{64}$/;

function bytesOfHex(value: string): Uint8Array {
  return hexPattern.test(value) ? new Uint8Array(Buffer.from(value, "hex")) : new Uint8Array(0);
}

/**
 * Checks everything a file claims, with nothing but the workspace's public key: each entry's hash
 * over its content, each link to the entry before, the positions, and that every checkpoint is
 * signed by the key and matches the entry at its position, the last entry among them. Answers
 * the first problem by position.
 */
export function verifyChainFile(file: ChainFile, publicKey: Uint8Array): ChainVerdict {
  const entries = file.entries.map((e) => ({
    ...e,
    previousHash: bytesOfHex(e.previousHash),
    hash: bytesOfHex(e.hash),
    timestamp: new Date(e.timestamp),
  }));
  const problems: Array<Extract<ChainVerdict, { ok: false }>> = [];
  const foreign = file.entries.find((e) => e.workspaceId !== file.workspaceId);
  if (foreign !== undefined) {
    problems.push({
      ok: false,
      position: foreign.position,
      id: foreign.id,
      problem: "foreign_entry",
      message: `entry ${foreign.position} (${foreign.id}) belongs to workspace ${foreign.workspaceId}, not ${file.workspaceId}`,
    });
  }
  // Hashed as written: a timestamp in any other form than the canonical one was edited.
  const canonicalTime = (text: string) => {
    const date = new Date(text);
    return !Number.isNaN(date.getTime()) && date.toISOString() === text;
  };
  const unreadable = file.entries.find((e) => !canonicalTime(e.timestamp));
  if (unreadable !== undefined) {
    problems.push({
      ok: false,
      position: unreadable.position,
      id: unreadable.id,
      problem: "edited",
      message: `entry ${unreadable.position} (${unreadable.id}) was edited: its timestamp is not in the form it was hashed in`,
    });
  }
  const chainBreak = findChainBreak(
    { position: file.start.position, hash: bytesOfHex(file.start.hash) },
    entries,
  );
  if (chainBreak !== null) {
    const entry = file.entries[chainBreak.index]!;
    const expected =
      chainBreak.index === 0 ? file.start.position + 1 : file.entries[chainBreak.index - 1]!.position + 1;
    if (chainBreak.problem === "edited") {
      problems.push({
        ok: false,
        position: entry.position,
        id: entry.id,
        problem: "edited",
        message: `entry ${entry.position} (${entry.id}) was edited: its hash does not match its content`,
      });
    } else if (entry.position > expected && !file.entries.some((e) => e.position === expected)) {
      problems.push({
        ok: false,
        position: expected,
        problem: "missing",
        message: `entry ${expected} is missing: entry ${entry.position} (${entry.id}) does not follow entry ${expected - 1}`,
      });
    } else if (entry.position === expected && chainBreak.index > 0) {
      // In place, yet not linked to the entry before: that one was rewritten, hash and all.
      const before = file.entries[chainBreak.index - 1]!;
      problems.push({
        ok: false,
        position: before.position,
        id: before.id,
        problem: "edited",
        message: `entry ${before.position} (${before.id}) was edited: entry ${entry.position} was chained to another hash`,
      });
    } else {
      problems.push({
        ok: false,
        position: expected,
        id: entry.id,
        problem: "out_of_place",
        message:
          entry.position === expected
            ? `entry ${entry.position} (${entry.id}) does not follow the hash the file starts from`
            : `entries are out of order: entry ${entry.position} (${entry.id}) stands where entry ${expected} belongs`,
      });
    }
  }
  const hashAt = new Map<number, string>([[file.start.position, file.start.hash]]);
  for (const e of file.entries) if (!hashAt.has(e.position)) hashAt.set(e.position, e.hash);
  const last =
    file.entries.length === 0 ? file.start.position : Math.max(...file.entries.map((e) => e.position));
  let covered = file.entries.length === 0;
  for (const c of file.checkpoints) {
    const signedAt = new Date(c.signedAt);
    const signature = new Uint8Array(Buffer.from(c.signature, "base64"));
    const checkpoint = {
      workspaceId: file.workspaceId,
      position: c.position,
      hash: bytesOfHex(c.hash),
      signedAt,
      signature,
    };
    if (
      Number.isNaN(signedAt.getTime()) ||
      !hexPattern.test(c.hash) ||
      !checkpointVerifies(checkpoint, publicKey)
    ) {
      problems.push({
        ok: false,
        position: c.position,
        problem: "forged_checkpoint",
        message: `the checkpoint of position ${c.position} signed at ${c.signedAt} is not signed by this key: forged or altered`,
      });
      continue;
    }
    const recorded = hashAt.get(c.position);
    if (recorded === undefined && c.position > last) {
      problems.push({
        ok: false,
        position: last + 1,
        problem: "missing",
        message: `entry ${last + 1} is missing: a checkpoint signed at ${c.signedAt} covers the chain to position ${c.position}, the file ends at ${last}`,
      });
    } else if (recorded !== undefined && recorded !== c.hash) {
      const entry = file.entries.find((e) => e.position === c.position);
      problems.push({
        ok: false,
        position: c.position,
        ...(entry && { id: entry.id }),
        problem: "checkpoint_mismatch",
        message: `entry ${c.position}${entry ? ` (${entry.id})` : ""} differs from the one signed at ${c.signedAt}: it or an entry before it was rewritten`,
      });
    }
    // A valid checkpoint past the end has named the missing entries already.
    if (c.position >= last) covered = true;
  }
  // The end unsigned matters only when nothing else is wrong: a forged or later checkpoint says more.
  if (!covered && problems.length === 0) {
    problems.push({
      ok: false,
      position: last,
      problem: "unsigned",
      message: `no checkpoint signs the end of the file (position ${last}): entries may have been added or removed at its end`,
    });
  }
  if (problems.length > 0) {
    // The earliest position; at one position, the order found.
    return problems.reduce((first, p) => (p.position < first.position ? p : first));
  }
  return { ok: true, entries: file.entries.length, checkpoints: file.checkpoints.length, last };
}

/** The bytes a file's checkpoint signs, for `openssl pkeyutl -verify -rawin`. */
export function chainFileCheckpointMessage(file: ChainFile, checkpoint: ChainFileCheckpoint): Uint8Array {
  return checkpointMessage({
    workspaceId: file.workspaceId,
    position: checkpoint.position,
    hash: bytesOfHex(checkpoint.hash),
    signedAt: new Date(checkpoint.signedAt),
  });
}

/** The `recording.complete` entry of a file whose SHA-256 is `sha256` (hex), if any. */
export interface RecordingMatch {
  readonly position: number;
  readonly entryId: string;
  readonly recordingId: string;
}

/**
 * Finds the entry that completed a recording with this SHA-256 (its `resource` is
 * `recording:<id> sha256=<hex> …`). Trust it only once the file verified.
 */
export function findRecording(file: ChainFile, sha256: string): RecordingMatch | null {
  for (const entry of file.entries) {
    if (entry.action !== "recording.complete") continue;
    const match = /^recording:(\S+) sha256=([0-9a-f]{64}) /.exec(entry.resource);
    if (match?.[2] === sha256) return { position: entry.position, entryId: entry.id, recordingId: match[1]! };
  }
  return null;
}
