import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyKrl, SshdFiles, usernamePattern } from "./sshd-files.js";

const run = promisify(execFile);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-sshd-files-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const username = fc.stringMatching(/^[a-z_][a-z0-9_-]{0,31}$/);
const id = fc.uuid();

describe("the sshd files", () => {
  it("the principals folder holds exactly the map: one file per granted username, nothing else", async () => {
    const files = new SshdFiles(join(dir, "map"));
    await files.prepare();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.oneof(username, fc.string({ maxLength: 40 })), fc.array(id, { maxLength: 4 })), {
          maxLength: 8,
        }),
        async (entries) => {
          const map = new Map(entries);
          await files.writePrincipals(map);
          const expected = [...map].filter(([name, ids]) => usernamePattern.test(name) && ids.length > 0);
          const names = (await readdir(files.principalsDir)).sort();
          expect(names).toEqual(expected.map(([name]) => name).sort());
          for (const [name, ids] of expected) {
            expect(await readFile(join(files.principalsDir, name), "utf8")).toBe(
              ids.map((i) => `${i}\n`).join(""),
            );
          }
          expect(Object.fromEntries(await files.readPrincipals())).toEqual(Object.fromEntries(expected));
        },
      ),
      { numRuns: 40 },
    );
  });

  it("writes only on change, with mode 0644, and leaves no temporary files", async () => {
    const files = new SshdFiles(join(dir, "modes"));
    await files.prepare();
    expect(await files.writeTrustedUserCaKeys("ssh-ed25519 AAAA first\n\nssh-ed25519 BBBB second")).toBe(
      true,
    );
    expect(await readFile(files.trustedUserCaKeys, "utf8")).toBe(
      "ssh-ed25519 AAAA first\nssh-ed25519 BBBB second\n",
    );
    expect(await files.writeTrustedUserCaKeys("ssh-ed25519 AAAA first\nssh-ed25519 BBBB second\n")).toBe(
      false,
    );
    expect((await stat(files.trustedUserCaKeys)).mode & 0o777).toBe(0o644);
    expect((await stat(files.principalsDir)).mode & 0o777).toBe(0o755);
    expect(await files.writePrincipals(new Map([["alice", ["x"]]]))).toBe(true);
    expect(await files.writePrincipals(new Map([["alice", ["x"]]]))).toBe(false);
    expect(await files.writePrincipals(new Map())).toBe(true);
    expect((await readdir(files.dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("prints the sshd_config lines for its folder", async () => {
    const files = new SshdFiles("/etc/ssh/wap");
    expect(files.configLines()).toEqual([
      "TrustedUserCAKeys /etc/ssh/wap/trusted_user_ca_keys",
      "AuthorizedPrincipalsFile /etc/ssh/wap/principals/%u",
      "HostCertificate /etc/ssh/wap/host_certificate.pub",
      "RevokedKeys /etc/ssh/wap/revoked_keys",
    ]);
    // Something in the folder that is not a principals file is left alone.
    const other = new SshdFiles(join(dir, "other"));
    await other.prepare();
    await writeFile(join(other.principalsDir, ".keep"), "");
    await other.writePrincipals(new Map());
    expect(await readdir(other.principalsDir)).toEqual([".keep"]);
  });

  it("prepares an empty revocation list that ssh-keygen reads, and keeps one already there", async () => {
    const files = new SshdFiles(join(dir, "krl"));
    await files.prepare();
    const keyFile = join(dir, "krl-key");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
    const { stdout } = await run("ssh-keygen", ["-Q", "-f", files.revokedKeys, `${keyFile}.pub`]);
    expect(stdout).toMatch(/: ok$/m);
    expect(Buffer.from(await readFile(files.revokedKeys)).equals(Buffer.from(emptyKrl()))).toBe(true);
    const fetched = Buffer.concat([Buffer.from(emptyKrl()), Buffer.from([9])]);
    expect(await files.writeRevokedKeys(fetched)).toBe(true);
    expect(await files.writeRevokedKeys(fetched)).toBe(false);
    await files.prepare();
    expect((await readFile(files.revokedKeys)).equals(fetched)).toBe(true);
  });
});
