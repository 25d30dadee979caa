/**
 * The files an sftp or scp login read and wrote, from its recording's markers (the agent writes
 * one `sftp "<path>": …` marker per file, then `sftp: <totals>`): the console lists them beside the
 * player, since such a recording has no output to play.
 */
export interface RecordingFiles {
  readonly files: readonly string[];
  readonly summary: string | undefined;
}

/** The sftp markers of an asciicast file, in order; lines that are not markers are skipped. */
export function recordingFiles(cast: string): RecordingFiles {
  const files: string[] = [];
  let summary: string | undefined;
  for (const line of cast.split("\n").slice(1)) {
    if (!line.includes('"m"')) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (!Array.isArray(event) || event[1] !== "m" || typeof event[2] !== "string") continue;
    const text = event[2];
    if (text.startsWith('sftp "')) files.push(text.slice("sftp ".length));
    else if (text.startsWith("sftp: ") && /^sftp: \d+ files,/.test(text))
      summary = text.slice("sftp: ".length);
  }
  return { files, summary };
}
