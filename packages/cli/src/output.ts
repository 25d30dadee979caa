/**
 * What commands print: a result on stdout (a table or lines for people, JSON with `--json`), and
 * progress and prompts on stderr, so `--json` output always parses.
 *
 * Text from the server (names, descriptions, error messages) is written by whoever administers a
 * workspace, so everything printed for people shows control characters as escapes (`\x1b`,
 * `\u{202e}`): no server string can move the cursor, recolour or clear the terminal, set its
 * title, or reorder what is shown. Commands put server strings into their sentences through
 * {@link printable}, and the whole text is escaped again here, so only the line breaks of the
 * command's own layout pass; a table cell or an error shows every control character, line breaks
 * included, escaped. `--json` output
 * is exact JSON: the characters JSON leaves raw (DEL, C1, bidirectional controls) are written as
 * `\uXXXX` escapes, which parse to the same strings.
 *
 * @module
 */
import { controlCharacters } from "@wap/ssh-wire/forms";

const everyControl = new RegExp(controlCharacters.source, "gu");

const escaped = (c: string) => {
  const code = c.codePointAt(0)!;
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
};

/** `text` with every control character written as an escape; with `lines`, line breaks pass. */
export function printable(text: string, options: { readonly lines?: boolean } = {}): string {
  return text.replace(everyControl, (c) => (options.lines && c === "\n" ? c : escaped(c)));
}
export interface Output {
  readonly json: boolean;
  /** The command's result: `value` as JSON with `--json`, else the human text. */
  result(value: unknown, human: () => string): void;
  /** A message for the person at the terminal (stderr). */
  note(message: string): void;
}

export function createOutput(
  json: boolean,
  stdout: (text: string) => void = (t) => process.stdout.write(t),
  stderr: (text: string) => void = (t) => process.stderr.write(t),
): Output {
  return {
    json,
    result(value, human) {
      if (json) stdout(`${jsonText(value)}\n`);
      else {
        const text = printable(human(), { lines: true });
        if (text !== "") stdout(text.endsWith("\n") ? text : `${text}\n`);
      }
    },
    note(message) {
      stderr(`${printable(message, { lines: true })}\n`);
    },
  };
}

/** `value` as JSON, with no control character left raw (only the layout's line breaks). */
function jsonText(value: unknown): string {
  return JSON.stringify(value, jsonValue, 2).replace(everyControl, (c) =>
    c === "\n" ? c : `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}

/** bigint and Date as strings; everything else as is. */
function jsonValue(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** A plain text table with a header row, columns padded to their widest cell. */
export function table(headers: readonly string[], cells: readonly (readonly string[])[]): string {
  if (cells.length === 0) return "";
  // Escaped before measuring, so a cell is one line and the columns line up as shown.
  const rows = cells.map((row) => row.map((cell) => printable(cell)));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}
