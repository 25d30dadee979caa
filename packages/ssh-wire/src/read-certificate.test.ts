import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readSshCertificate } from "./read-certificate.js";

const dir = mkdtempSync(join(tmpdir(), "wap-ssh-wire-"));
execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "ca")]);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const withoutComment = (line: string) => line.trim().split(/\s+/).slice(0, 2).join(" ");

describe("readSshCertificate on what ssh-keygen signs", () => {
  it.each([
    ["ed25519", []],
    ["ecdsa", ["-b", "384"]],
    ["rsa", ["-b", "2048"]],
  ])("gives a %s certificate's key, CA, principals and validity", (type, bits) => {
    const key = join(dir, `user_${type}`);
    execFileSync("ssh-keygen", ["-q", "-t", type, ...bits, "-N", "", "-f", key]);
    execFileSync("ssh-keygen", [
      ...["-q", "-s", join(dir, "ca"), "-I", "alice@laptop", "-n", "alice,admin"],
      ...["-z", "42", "-V", "20200101000000:20300101000000", `${key}.pub`],
    ]);
    const certificate = readSshCertificate(readFileSync(`${key}-cert.pub`, "utf8"));
    expect(certificate.type).toBe("user");
    expect(certificate.keyId).toBe("alice@laptop");
    expect(certificate.serial).toBe(42n);
    expect(certificate.principals).toEqual(["alice", "admin"]);
    expect(certificate.publicKey).toBe(withoutComment(readFileSync(`${key}.pub`, "utf8")));
    expect(certificate.caPublicKey).toBe(withoutComment(readFileSync(join(dir, "ca.pub"), "utf8")));
    expect(certificate.validAfter.getUTCFullYear()).toBe(2020);
    expect(certificate.validBefore.getUTCFullYear()).toBe(2030);
  });

  it("refuses a plain public key, naming its type", () => {
    expect(() => readSshCertificate(readFileSync(join(dir, "ca.pub"), "utf8"))).toThrow(
      /not an OpenSSH certificate \(type "ssh-ed25519"\)/,
    );
  });
});
