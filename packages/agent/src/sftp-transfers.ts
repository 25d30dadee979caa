/**
 * What an sftp login (and `scp`, which speaks sftp) does to files, read from the SFTP protocol
 * (version 3) as it passes through the session wrapper, in both directions, without changing it.
 *
 * - Requests (client to server) say what is asked: OPEN (path, flags), READ, WRITE, CLOSE, REMOVE,
 *   RENAME, MKDIR, RMDIR, SETSTAT; answers (server to client) say what happened: a HANDLE for an
 *   OPEN, DATA for a READ (the bytes read), a STATUS for the rest (a WRITE counts when it succeeds).
 * - A file is reported ({@link FileActivity}) when its last handle closes, when a path operation
 *   completes, and at the end for what is still open.
 * - Bounded: a packet longer than {@link sftpLimits.packetBytes} (the protocol's limit), a malformed
 *   one, or more than {@link sftpLimits.pendingRequests} unanswered requests stop the listing
 *   (`failed`), never the transfer; the caller relays the bytes whatever happens here.
 *
 * Node only: the session wrapper imports it.
 *
 * @module
 */

/** A subsystem reaches a forced command as the program sshd_config gives it: sftp-server's path. */
export function isSftpServerCommand(command: string): boolean {
  return /(^|\/)sftp-server(\s|$)/.test(command);
}

export const sftpLimits = {
  /** The largest packet the protocol allows (OpenSSH's sftp-server refuses more). */
  packetBytes: 256 * 1024,
  /** Requests awaiting an answer; clients pipeline a few dozen. */
  pendingRequests: 4096,
  /** Open handles tracked at once. */
  openHandles: 1024,
  /** Longest path kept; longer ones are cut (and say so). */
  pathChars: 4096,
} as const;

export interface FileActivity {
  readonly path: string;
  readonly bytesRead: number;
  readonly bytesWritten: number;
  /** In the order first seen, each once; a failed one as `<op> failed`. */
  readonly operations: readonly string[];
  /** For a rename: the new path. */
  readonly renamedTo?: string;
}

const FXP = {
  INIT: 1,
  VERSION: 2,
  OPEN: 3,
  CLOSE: 4,
  READ: 5,
  WRITE: 6,
  SETSTAT: 9,
  REMOVE: 13,
  MKDIR: 14,
  RMDIR: 15,
  RENAME: 18,
  STATUS: 101,
  HANDLE: 102,
  DATA: 103,
  EXTENDED: 200,
} as const;

class Malformed extends Error {}

/** Reads the fields of one packet's payload. */
class Fields {
  #at = 0;
  constructor(private readonly bytes: Buffer) {}
  byte(): number {
    if (this.#at + 1 > this.bytes.length) throw new Malformed("packet too short");
    return this.bytes[this.#at++]!;
  }
  uint32(): number {
    if (this.#at + 4 > this.bytes.length) throw new Malformed("packet too short");
    const value = this.bytes.readUInt32BE(this.#at);
    this.#at += 4;
    return value;
  }
  skip(n: number): void {
    if (this.#at + n > this.bytes.length) throw new Malformed("packet too short");
    this.#at += n;
  }
  bytesField(): Buffer {
    const length = this.uint32();
    if (this.#at + length > this.bytes.length) throw new Malformed("string past the packet's end");
    const value = this.bytes.subarray(this.#at, this.#at + length);
    this.#at += length;
    return value;
  }
  text(): string {
    const value = this.bytesField().toString("utf8");
    return value.length > sftpLimits.pathChars ? `${value.slice(0, sftpLimits.pathChars)}…` : value;
  }
}

/** Splits one direction's byte stream into packets (`uint32 length`, then `length` bytes). */
class Framer {
  #chunks: Buffer[] = [];
  #size = 0;
  constructor(private readonly onPacket: (payload: Buffer) => void) {}
  push(data: Uint8Array): void {
    this.#chunks.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    this.#size += data.byteLength;
    while (this.#size >= 4) {
      const head = this.#chunks[0]!.length >= 4 ? this.#chunks[0]! : this.#join();
      const length = head.readUInt32BE(0);
      if (length < 1 || length > sftpLimits.packetBytes) {
        throw new Malformed(`a packet of ${length} bytes (at most ${sftpLimits.packetBytes})`);
      }
      if (this.#size < 4 + length) return;
      const all = this.#join();
      this.onPacket(all.subarray(4, 4 + length));
      const rest = all.subarray(4 + length);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#size = rest.length;
    }
  }
  #join(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks)];
    return this.#chunks[0]!;
  }
}

interface Entry {
  path: string;
  bytesRead: number;
  bytesWritten: number;
  operations: string[];
  renamedTo?: string;
}

type Request =
  | { readonly op: "open"; readonly path: string; readonly flags: number }
  | { readonly op: "read" | "close"; readonly handle: string }
  | { readonly op: "write"; readonly handle: string; readonly length: number }
  | { readonly op: "remove" | "mkdir" | "rmdir" | "setstat"; readonly path: string }
  | { readonly op: "rename"; readonly path: string; readonly to: string };

/** The open flags, named as the operation's detail (`open read,write,create,truncate`). */
function openMode(flags: number): string {
  const names = ["read", "write", "append", "create", "truncate", "exclusive"];
  const set = names.filter((_, bit) => (flags & (1 << bit)) !== 0);
  return set.length > 0 ? `open ${set.join(",")}` : "open";
}

export class SftpTransfers {
  readonly #report: (file: FileActivity) => void;
  readonly #requests = new Map<number, Request>();
  readonly #handles = new Map<string, Entry>();
  readonly #fromClient = new Framer((p) => this.#request(p));
  readonly #fromServer = new Framer((p) => this.#answer(p));
  #failed: string | undefined;
  #files = 0;

  /** `report` gets each file's activity once it is done (closed, or the path operation answered). */
  constructor(report: (file: FileActivity) => void) {
    this.#report = report;
  }

  /** Why the listing stopped, if it did (the transfer goes on). */
  get failed(): string | undefined {
    return this.#failed;
  }

  /** Files reported so far. */
  get files(): number {
    return this.#files;
  }

  fromClient(data: Uint8Array): void {
    this.#guard(() => this.#fromClient.push(data));
  }

  fromServer(data: Uint8Array): void {
    this.#guard(() => this.#fromServer.push(data));
  }

  /** Reports the files still open (the login ended without closing them). */
  finish(): void {
    const open = new Set(this.#handles.values());
    this.#handles.clear();
    for (const entry of open) this.#emit(entry);
  }

  #guard(parse: () => void): void {
    if (this.#failed !== undefined) return;
    try {
      parse();
    } catch (error) {
      this.#failed = error instanceof Error ? error.message : String(error);
      this.finish();
    }
  }

  #request(payload: Buffer): void {
    const fields = new Fields(payload);
    const type = fields.byte();
    if (type === FXP.INIT) return;
    const id = fields.uint32();
    let request: Request | undefined;
    switch (type) {
      case FXP.OPEN:
        request = { op: "open", path: fields.text(), flags: fields.uint32() };
        break;
      case FXP.READ:
      case FXP.CLOSE:
        request = {
          op: type === FXP.READ ? "read" : "close",
          handle: fields.bytesField().toString("latin1"),
        };
        break;
      case FXP.WRITE: {
        const handle = fields.bytesField().toString("latin1");
        fields.skip(8);
        request = { op: "write", handle, length: fields.bytesField().length };
        break;
      }
      case FXP.REMOVE:
      case FXP.MKDIR:
      case FXP.RMDIR:
      case FXP.SETSTAT: {
        const op = ({ 13: "remove", 14: "mkdir", 15: "rmdir", 9: "setstat" } as const)[type];
        request = { op, path: fields.text() };
        break;
      }
      case FXP.RENAME:
        request = { op: "rename", path: fields.text(), to: fields.text() };
        break;
      case FXP.EXTENDED: {
        const name = fields.bytesField().toString("latin1");
        if (name === "posix-rename@openssh.com")
          request = { op: "rename", path: fields.text(), to: fields.text() };
        break;
      }
    }
    if (request === undefined) return;
    if (this.#requests.size >= sftpLimits.pendingRequests) {
      throw new Malformed(`more than ${sftpLimits.pendingRequests} requests unanswered`);
    }
    this.#requests.set(id, request);
  }

  #answer(payload: Buffer): void {
    const fields = new Fields(payload);
    const type = fields.byte();
    if (type === FXP.VERSION) return;
    const id = fields.uint32();
    const request = this.#requests.get(id);
    if (request === undefined) return;
    this.#requests.delete(id);
    const ok = type === FXP.STATUS ? fields.uint32() === 0 : type !== FXP.STATUS;
    switch (request.op) {
      case "open": {
        if (type !== FXP.HANDLE) {
          this.#emit(this.#entry(request.path, `${openMode(request.flags)} failed`));
          return;
        }
        const handle = fields.bytesField().toString("latin1");
        if (!this.#handles.has(handle) && this.#handles.size >= sftpLimits.openHandles) {
          throw new Malformed(`more than ${sftpLimits.openHandles} files open`);
        }
        const entry = this.#entry(request.path, openMode(request.flags));
        this.#handles.set(handle, entry);
        return;
      }
      case "read": {
        const entry = this.#handles.get(request.handle);
        if (!entry) return;
        if (type === FXP.DATA) entry.bytesRead += fields.bytesField().length;
        note(entry, type === FXP.DATA || type === FXP.STATUS ? "read" : "read failed");
        return;
      }
      case "write": {
        const entry = this.#handles.get(request.handle);
        if (!entry) return;
        if (ok) entry.bytesWritten += request.length;
        note(entry, ok ? "write" : "write failed");
        return;
      }
      case "close": {
        const entry = this.#handles.get(request.handle);
        if (!entry) return;
        this.#handles.delete(request.handle);
        note(entry, ok ? "close" : "close failed");
        this.#emit(entry);
        return;
      }
      default: {
        const entry = this.#entry(request.path, ok ? request.op : `${request.op} failed`);
        if (request.op === "rename") entry.renamedTo = request.to;
        this.#emit(entry);
      }
    }
  }

  #entry(path: string, operation: string): Entry {
    return { path, bytesRead: 0, bytesWritten: 0, operations: [operation] };
  }

  #emit(entry: Entry): void {
    this.#files++;
    const { path, bytesRead, bytesWritten, operations, renamedTo } = entry;
    this.#report({
      path,
      bytesRead,
      bytesWritten,
      operations,
      ...(renamedTo !== undefined ? { renamedTo } : {}),
    });
  }
}

function note(entry: Entry, operation: string): void {
  if (!entry.operations.includes(operation)) entry.operations.push(operation);
}
