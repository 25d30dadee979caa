import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyKrl, principalPattern, SshdFiles, sameRevocations, usernamePattern } from "./sshd-files.js";

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

  it("keeps revoked_keys when only the KRL's version and generation date differ", async () => {
    let run = 0;
    const krl = (header: Uint8Array, body: Uint8Array) => {
      const bytes = Buffer.concat([Buffer.from(emptyKrl()), Buffer.from(body)]);
      bytes.set(header, 12);
      return bytes;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.uint8Array({ maxLength: 64 }),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        async (first, second, body, other) => {
          // Each run starts from no file: what an earlier run left would decide the first write.
          const files = new SshdFiles(join(dir, `krl-dates-${run++}`));
          await files.prepare();
          // The first write may itself be kept out: the empty list prepare() wrote says the same
          // when the body is empty.
          await files.writeRevokedKeys(krl(first, body));
          const kept = await readFile(files.revokedKeys);
          expect(sameRevocations(kept, krl(first, body))).toBe(true);
          expect(await files.writeRevokedKeys(krl(second, body))).toBe(false);
          expect((await readFile(files.revokedKeys)).equals(kept)).toBe(true);
          const changed = !Buffer.from(other).equals(Buffer.from(body));
          expect(await files.writeRevokedKeys(krl(second, other))).toBe(changed);
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe("what the server sends, written for sshd", () => {
  /** Strings as a hostile workspace or server could send them, beside plain ids. */
  const hostile = fc.oneof(
    id,
    fc.string({ unit: "binary", maxLength: 30 }),
    fc.constantFrom(
      `command="touch /tmp/x" ${crypto.randomUUID()}`,
      `${crypto.randomUUID()}\n${crypto.randomUUID()}`,
      "a,b",
      "#comment",
      "",
    ),
  );

  it("principals files hold one plain word per line, whatever the ids", async () => {
    const files = new SshdFiles(join(dir, "hostile-principals"));
    await files.prepare();
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 6 }), async (ids) => {
        await files.writePrincipals(new Map([["alice", ids]]));
        const plain = ids.filter((i) => principalPattern.test(i));
        const names = await readdir(files.principalsDir);
        if (plain.length === 0) {
          expect(names).toEqual([]);
          return;
        }
        const lines = (await readFile(join(files.principalsDir, "alice"), "utf8")).split("\n");
        expect(lines).toEqual([...plain, ""]);
        for (const line of lines.slice(0, -1)) expect(line).toMatch(/^[A-Za-z0-9][A-Za-z0-9._@+:-]*$/);
      }),
      { numRuns: 60 },
    );
  });

  it("the trusted keys file holds only key lines, as the real ssh-keygen reads them", async () => {
    const files = new SshdFiles(join(dir, "hostile-keys"));
    await files.prepare();
    const keys: string[] = [];
    for (const name of ["ca-1", "ca-2"]) {
      await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", join(dir, name)]);
      keys.push((await readFile(join(dir, `${name}.pub`), "utf8")).trim());
    }
    const [type, blob] = keys[0]!.split(" ");
    await files.writeTrustedUserCaKeys(
      [
        keys[0],
        `cert-authority,command="touch /tmp/x" ${type} ${blob}`,
        `${type} ${blob} comment\u0085with a C1 line break`,
        `${type} ${blob} \u202eevil`,
        keys[1],
      ].join("\n"),
    );
    expect(await readFile(files.trustedUserCaKeys, "utf8")).toBe(`${keys[0]}\n${keys[1]}\n`);
    const { stdout } = await run("ssh-keygen", ["-l", "-f", files.trustedUserCaKeys]);
    expect(
      stdout
        .trim()
        .split("\n")
        .map((line) => line.split(" ").at(-2)),
    ).toEqual(["ca-1", "ca-2"]);
    await expect(files.writeHostCertificate(`${keys[0]}\n${keys[1]}`)).rejects.toThrow(/not one OpenSSH/);
  });
});
