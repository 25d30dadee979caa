import { describe, expect, it } from "vitest";
import { recordingFiles } from "./recording-files";

describe("recordingFiles", () => {
  it("lists the sftp markers' files and totals, skipping other events and broken lines", () => {
    const cast = [
      JSON.stringify({ version: 2, width: 80, height: 24, title: "ssh subsystem: sftp" }),
      JSON.stringify([0, "m", "sftp: the protocol's bytes are not recorded, the files it moved are"]),
      JSON.stringify([
        0.1,
        "m",
        'sftp "/home/ada/up.bin": written 5 bytes (open write,create, write, close)',
      ]),
      '[0.2, "m", broken',
      JSON.stringify([0.2, "o", 'sftp "/not/a/marker": read 1 bytes']),
      JSON.stringify([0.3, "m", 'sftp "a\\"b": read 9 bytes (open read, read, close)']),
      JSON.stringify([0.4, "m", "sftp: 2 files, 9 bytes read, 5 bytes written"]),
      JSON.stringify([0.4, "m", "exit status 0"]),
      "",
    ].join("\n");
    expect(recordingFiles(cast)).toEqual({
      files: [
        '"/home/ada/up.bin": written 5 bytes (open write,create, write, close)',
        '"a\\"b": read 9 bytes (open read, read, close)',
      ],
      summary: "2 files, 9 bytes read, 5 bytes written",
    });
    expect(recordingFiles('{"version":2}\n[0,"o","hi"]\n')).toEqual({ files: [], summary: undefined });
  });
});
