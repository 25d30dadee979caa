import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SftpMarkers, sftpMarkerLimits } from "./sftp-markers.js";
import { type FileActivity, SftpTransfers, sftpLimits } from "./sftp-transfers.js";

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const str = (s: string | Buffer) => {
  const b = typeof s === "string" ? Buffer.from(s) : s;
  return Buffer.concat([u32(b.length), b]);
};
const packet = (type: number, ...fields: Buffer[]) => {
  const body = Buffer.concat([Buffer.from([type]), ...fields]);
  return Buffer.concat([u32(body.length), body]);
};
const noAttrs = u32(0);

/** One upload of `data` to `path` and one download of `size` bytes of `from`, as client and server say them. */
function session(path: string, data: Buffer, from: string, size: number): { client: Buffer; server: Buffer } {
  const client: Buffer[] = [packet(1, u32(3))];
  const server: Buffer[] = [packet(2, u32(3))];
  // Upload: open write|create|truncate, writes of up to 32 KiB, close.
  client.push(packet(3, u32(1), str(path), u32(0x1a), noAttrs));
  server.push(packet(102, u32(1), str("h1")));
  let id = 10;
  for (let at = 0; at < data.length; at += 32768) {
    const part = data.subarray(at, at + 32768);
    client.push(packet(6, u32(id), str("h1"), Buffer.alloc(8), str(part)));
    server.push(packet(101, u32(id), u32(0), str(""), str("")));
    id++;
  }
  client.push(packet(4, u32(2), str("h1")));
  server.push(packet(101, u32(2), u32(0), str(""), str("")));
  // Download: open read, reads until EOF, close.
  client.push(packet(3, u32(3), str(from), u32(1), noAttrs));
  server.push(packet(102, u32(3), str("h2")));
  for (let at = 0; at <= size; at += 32768) {
    client.push(packet(5, u32(id), str("h2"), Buffer.alloc(8), u32(32768)));
    const n = Math.min(32768, size - at);
    server.push(
      n > 0 ? packet(103, u32(id), str(Buffer.alloc(n, 7))) : packet(101, u32(id), u32(1), str(""), str("")),
    );
    id++;
  }
  client.push(packet(4, u32(4), str("h2")));
  server.push(packet(101, u32(4), u32(0), str(""), str("")));
  return { client: Buffer.concat(client), server: Buffer.concat(server) };
}

/** Feeds both directions split at `cuts`, alternating so each request precedes its answer. */
function feed(t: SftpTransfers, client: Buffer, server: Buffer, cuts: number[]): void {
  const pieces = (b: Buffer) => {
    const points = [...new Set(cuts.map((c) => c % (b.length + 1)))].sort((x, y) => x - y);
    const out: Buffer[] = [];
    let from = 0;
    for (const p of points) {
      out.push(b.subarray(from, p));
      from = p;
    }
    out.push(b.subarray(from));
    return out;
  };
  // The whole request stream first: answers never come before their requests.
  for (const p of pieces(client)) t.fromClient(p);
  for (const p of pieces(server)) t.fromServer(p);
}

const expected = (path: string, written: number, from: string, read: number): FileActivity[] => [
  {
    path,
    bytesRead: 0,
    bytesWritten: written,
    operations: ["open write,create,truncate", ...(written > 0 ? ["write"] : []), "close"],
  },
  { path: from, bytesRead: read, bytesWritten: 0, operations: ["open read", "read", "close"] },
];

describe("the sftp listing of a login", () => {
  it("lists each file with its path, the bytes read or written and the operations", () => {
    const files: FileActivity[] = [];
    const t = new SftpTransfers((f) => files.push(f));
    const { client, server } = session("/tmp/up.bin", Buffer.alloc(100_000, 1), "/etc/hostname", 70_000);
    feed(t, client, server, []);
    t.finish();
    expect(t.failed).toBeUndefined();
    expect(files).toEqual(expected("/tmp/up.bin", 100_000, "/etc/hostname", 70_000));
  });

  it("lists the same however the bytes are split or joined (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (name, up, down, cuts) => {
          const files: FileActivity[] = [];
          const t = new SftpTransfers((f) => files.push(f));
          const { client, server } = session(`/d/${name}`, Buffer.alloc(up, 3), "/src", down);
          feed(t, client, server, cuts);
          t.finish();
          expect(t.failed).toBeUndefined();
          expect(files).toEqual(expected(`/d/${name}`, up, "/src", down));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("lists path operations as they are answered, failures as failed", () => {
    const files: FileActivity[] = [];
    const t = new SftpTransfers((f) => files.push(f));
    const ok = (id: number) => packet(101, u32(id), u32(0), str(""), str(""));
    t.fromClient(
      Buffer.concat([
        packet(14, u32(1), str("/d"), noAttrs),
        packet(18, u32(2), str("/a"), str("/b")),
        packet(200, u32(3), str("posix-rename@openssh.com"), str("/b"), str("/c")),
        packet(13, u32(4), str("/c")),
        packet(15, u32(5), str("/d")),
        packet(9, u32(6), str("/e"), noAttrs),
        packet(3, u32(7), str("/nope"), u32(1), noAttrs),
      ]),
    );
    t.fromServer(Buffer.concat([ok(1), ok(2), ok(3), ok(4), ok(5), ok(6)]));
    t.fromServer(packet(101, u32(7), u32(2), str("No such file"), str("")));
    expect(files.map((f) => [f.path, f.operations, f.renamedTo])).toEqual([
      ["/d", ["mkdir"], undefined],
      ["/a", ["rename"], "/b"],
      ["/b", ["rename"], "/c"],
      ["/c", ["remove"], undefined],
      ["/d", ["rmdir"], undefined],
      ["/e", ["setstat"], undefined],
      ["/nope", ["open read failed"], undefined],
    ]);
  });

  it("stops the listing, and nothing else, at a packet past the protocol's limit or a malformed one", () => {
    fc.assert(
      fc.property(fc.integer({ min: sftpLimits.packetBytes + 1, max: 0xffffffff }), (length) => {
        const files: FileActivity[] = [];
        const t = new SftpTransfers((f) => files.push(f));
        t.fromClient(packet(3, u32(1), str("/open"), u32(1), noAttrs));
        t.fromServer(packet(102, u32(1), str("h")));
        expect(() => t.fromClient(u32(length))).not.toThrow();
        expect(t.failed).toMatch(/at most 262144/);
        // What was open is listed; later bytes are ignored.
        expect(files.map((f) => f.path)).toEqual(["/open"]);
        t.fromClient(packet(13, u32(2), str("/later")));
        expect(files).toHaveLength(1);
      }),
      { numRuns: 50 },
    );
    const t = new SftpTransfers(() => {});
    t.fromClient(packet(3, u32(1), u32(1000)));
    expect(t.failed).toMatch(/past the packet's end/);
  });

  it("never throws on arbitrary bytes in either direction (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.uint8Array({ maxLength: 300 })), { maxLength: 20 }),
        (chunks) => {
          const t = new SftpTransfers(() => {});
          for (const [client, bytes] of chunks) {
            if (client) t.fromClient(bytes);
            else t.fromServer(bytes);
          }
          t.finish();
        },
      ),
    );
  });

  it("cuts a path past the longest kept, and says so (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 * sftpLimits.pathChars }), (length) => {
        const files: FileActivity[] = [];
        const t = new SftpTransfers((f) => files.push(f));
        t.fromClient(packet(13, u32(1), str("p".repeat(length))));
        t.fromServer(packet(101, u32(1), u32(0), str(""), str("")));
        const path = files[0]!.path;
        expect(path).toBe(
          length > sftpLimits.pathChars ? `${"p".repeat(sftpLimits.pathChars)}…` : "p".repeat(length),
        );
      }),
      { numRuns: 50 },
    );
  });

  it("bounds the files open at once", () => {
    const t = new SftpTransfers(() => {});
    for (let id = 0; id < sftpLimits.openHandles; id++) {
      t.fromClient(packet(3, u32(id), str(`/f${id}`), u32(1), noAttrs));
      t.fromServer(packet(102, u32(id), str(`h${id}`)));
    }
    expect(t.failed).toBeUndefined();
    t.fromClient(packet(3, u32(99_999), str("/one-more"), u32(1), noAttrs));
    t.fromServer(packet(102, u32(99_999), str("h-more")));
    expect(t.failed).toMatch(/more than 1024 files open/);
  });

  it("bounds the requests awaiting an answer", () => {
    const t = new SftpTransfers(() => {});
    for (let id = 0; id <= sftpLimits.pendingRequests; id++) t.fromClient(packet(13, u32(id), str("/x")));
    expect(t.failed).toMatch(/requests unanswered/);
  });
});

describe("the markers of an sftp recording", () => {
  const file = (path: string, bytesRead: number, bytesWritten: number, operations: string[]) => ({
    type: "f",
    path,
    bytesRead,
    bytesWritten,
    operations,
  });

  it("say the path, the bytes and the operations, and total them at the end", () => {
    const markers = new SftpMarkers();
    expect(markers.report(file("/tmp/a\nb", 0, 5, ["open write,create", "write", "close"]))).toEqual([
      'sftp "/tmp/a\\nb": written 5 bytes (open write,create, write, close)',
    ]);
    expect(markers.report(file("/x", 9, 0, ["open read", "read"]))).toEqual([
      'sftp "/x": read 9 bytes (open read, read)',
    ]);
    expect(markers.report({ type: "sftp-end", failed: "bad\u001b[31m" })).toEqual([
      "sftp: 2 files, 9 bytes read, 5 bytes written; the listing stopped early (bad?[31m), the transfer went on",
    ]);
    // Nothing after the end.
    expect(markers.report(file("/y", 1, 0, ["read"]))).toEqual([]);
    expect(markers.report({ type: "sftp-end" })).toEqual([]);
  });

  it("itemise at most the limit of files, then say how many more there were (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), (extra) => {
        const markers = new SftpMarkers();
        let written = 0;
        for (let i = 0; i < sftpMarkerLimits.files + extra; i++) {
          written += markers.report(file(`/f${i}`, 1, 0, ["read"])).length;
        }
        expect(written).toBe(sftpMarkerLimits.files);
        expect(markers.report({ type: "sftp-end" })).toEqual([
          ...(extra > 0 ? [`sftp: ${extra} more files were not itemised`] : []),
          `sftp: ${sftpMarkerLimits.files + extra} files, ${sftpMarkerLimits.files + extra} bytes read, 0 bytes written`,
        ]);
      }),
      { numRuns: 8 },
    );
  });

  it("refuse a report that is not one (the wrapper runs as the user)", () => {
    const markers = new SftpMarkers();
    for (const report of [
      { path: 1, bytesRead: 0, bytesWritten: 0, operations: [] },
      { path: "/a", bytesRead: -1, bytesWritten: 0, operations: [] },
      { path: "/a", bytesRead: 0, bytesWritten: 0.5, operations: [] },
      { path: "/a", bytesRead: 0, bytesWritten: 0, operations: ["rm -rf"] },
      { path: "/a", bytesRead: 0, bytesWritten: 0, operations: "read" },
      { path: "/a", bytesRead: 0, bytesWritten: 0, operations: Array(13).fill("read") },
      { path: "x".repeat(5000), bytesRead: 0, bytesWritten: 0, operations: [] },
      { path: "/a", bytesRead: 0, bytesWritten: 0, operations: [], renamedTo: 3 },
    ]) {
      expect(markers.report({ type: "f", ...report })).toEqual([]);
    }
    expect(markers.report({ type: "sftp-end" })).toEqual(["sftp: 0 files, 0 bytes read, 0 bytes written"]);
  });
});
