/**
 * What the recording of an sftp or scp login says, end to end: the real `sftp` and `scp` clients,
 * a real sshd (configured with what `wap-agent sshd-config` prints) running Debian's sftp-server as
 * its subsystem through the session wrapper, the real agent and server. The account, `wapuser`,
 * exists only in sshd's mount namespace (uid 0, a test folder as home).
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { PlatformClient } from "@wap/client";
import { findOrInstallSftpServer } from "@wap/test-kit/sftp-server-binary";
import {
  sshClientEnv as clientEnv,
  sshLogin as login,
  type SshUserCertificate,
  type SshWorld,
  startSshWorld,
} from "@wap/test-kit/ssh-world";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);

let world: SshWorld;
let dir: string;
let home: string;
let ada: PlatformClient;
let workspaceId: string;
let certificate: SshUserCertificate;
const seen = new Set<string>();

async function until<T>(probe: () => T | Promise<T>): Promise<NonNullable<T>> {
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Options every client gets (sftp and scp name the port -P): the test's certificate, no config, no host key checks. */
const clientOptions = () => world.clientOptions(certificate, "-P");

/** The next recording completed after the ones seen: its header and events. */
async function nextRecording(): Promise<{
  kind: string;
  command: string;
  header: Record<string, unknown>;
  events: [number, string, string][];
}> {
  const recording = await until(async () => {
    const { recordings } = await ada.recordings.listRecordings({ workspaceId, limit: 50 });
    return recordings.find((r) => r.complete && !seen.has(r.id));
  });
  seen.add(recording.id);
  let text = "";
  for await (const message of ada.recordings.getRecording({ workspaceId, recordingId: recording.id })) {
    if (message.msg.case === "chunk") text += Buffer.from(message.msg.value).toString("utf8");
  }
  const [header, ...events] = text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  return { kind: recording.kind, command: recording.command, header, events };
}

const markers = (events: [number, string, string][]) => events.filter((e) => e[1] === "m").map((e) => e[2]);

beforeAll(async () => {
  world = await startSshWorld({
    name: "wap-sftp-recordings",
    daemonName: "files-1",
    sftpServer: await findOrInstallSftpServer(),
  });
  ({ dir, home, ada, workspaceId } = world);
  const { daemonId } = world;
  await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { recordSessions: true } });
  await until(
    async () => (await ada.daemons.getDaemon({ workspaceId, id: daemonId })).daemon?.config?.recordSessions,
  );
  certificate = await world.userCertificate("ada");
}, 120_000);

afterAll(async () => {
  await world?.close();
});

describe("recordings of sftp and scp logins", () => {
  it("list each file an sftp login read or wrote, with its size and operations, and leave the transfer intact", {
    timeout: 60_000,
  }, async () => {
    const upload = randomBytes(300_000);
    const download = randomBytes(70_001);
    await writeFile(join(dir, "up.bin"), upload);
    await writeFile(join(home, "down.bin"), download);
    const batch = join(dir, "batch");
    await writeFile(
      batch,
      [
        `put ${join(dir, "up.bin")} up.bin`,
        `get down.bin ${join(dir, "down.bin")}`,
        "mkdir made",
        "rename up.bin made/moved.bin",
        "rm made/moved.bin",
        "rmdir made",
        "",
      ].join("\n"),
    );
    await run("sftp", [...clientOptions(), "-b", batch, `${login}@127.0.0.1`], { env: clientEnv() });
    expect((await readFile(join(dir, "down.bin"))).equals(download)).toBe(true);
    const recording = await nextRecording();
    expect(recording.kind).toBe("subsystem");
    expect(recording.header.title).toBe("ssh subsystem: sftp");
    // The protocol's bytes are not in it: only markers.
    expect(recording.events.every((e) => e[1] === "m")).toBe(true);
    const text = markers(recording.events);
    const at = (name: string) => JSON.stringify(join(home, name));
    expect(text).toContain(
      `sftp ${at("up.bin")}: written 300000 bytes (open write,create,truncate, write, close)`,
    );
    expect(text).toContain(`sftp ${at("down.bin")}: read 70001 bytes (open read, read, close)`);
    expect(text).toContain(`sftp ${at("made")}: (mkdir)`);
    expect(text).toContain(`sftp ${at("up.bin")}: renamed to ${at("made/moved.bin")} (rename)`);
    expect(text).toContain(`sftp ${at("made/moved.bin")}: (remove)`);
    expect(text).toContain(`sftp ${at("made")}: (rmdir)`);
    expect(text.at(-2)).toBe("sftp: 6 files, 70001 bytes read, 300000 bytes written");
    expect(text.at(-1)).toBe("exit status 0");
  });

  it("list what scp copied both ways (scp speaks sftp), and record legacy scp -O as its command line", {
    timeout: 60_000,
  }, async () => {
    const upload = randomBytes(123_457);
    await writeFile(join(dir, "scp-up.bin"), upload);
    await writeFile(join(home, "scp-down.txt"), "from the host\n");
    const scp = (...args: string[]) => run("scp", [...clientOptions(), ...args], { env: clientEnv() });
    await scp(join(dir, "scp-up.bin"), `${login}@127.0.0.1:copied.bin`);
    expect((await readFile(join(home, "copied.bin"))).equals(upload)).toBe(true);
    const up = markers((await nextRecording()).events);
    // A path is as the client named it: scp names it relative to the login's home.
    expect(up).toContain('sftp "copied.bin": written 123457 bytes (open write,create, write, close)');
    expect(up).toContain("sftp: 1 files, 0 bytes read, 123457 bytes written");

    await scp(`${login}@127.0.0.1:scp-down.txt`, join(dir, "scp-down.txt"));
    expect(await readFile(join(dir, "scp-down.txt"), "utf8")).toBe("from the host\n");
    const down = markers((await nextRecording()).events);
    expect(down).toContain('sftp "scp-down.txt": read 14 bytes (open read, read, close)');

    await scp("-O", join(dir, "scp-up.bin"), `${login}@127.0.0.1:legacy.bin`);
    expect((await readFile(join(home, "legacy.bin"))).equals(upload)).toBe(true);
    const legacy = await nextRecording();
    expect(legacy.kind).toBe("exec");
    expect(legacy.command).toBe("scp -t legacy.bin");
    expect(legacy.header.title).toBe("ssh exec: scp -t legacy.bin");
  });
});
