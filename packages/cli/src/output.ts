/**
 * What commands print: a result on stdout (a table or lines for people, JSON with `--json`), and
 * progress and prompts on stderr, so `--json` output always parses.
 *
 * @module
 */
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
      if (json) stdout(`${JSON.stringify(value, jsonValue, 2)}\n`);
      else {
        const text = human();
        if (text !== "") stdout(text.endsWith("\n") ? text : `${text}\n`);
      }
    },
    note(message) {
      stderr(`${message}\n`);
    },
  };
}

/** bigint and Date as strings; everything else as is. */
function jsonValue(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** A plain text table with a header row, columns padded to their widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return "";
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}
