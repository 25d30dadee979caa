import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyBlobOf, parseSshCertificate } from "./ssh-key.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-ssh-key-"));
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "ca")]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("reading OpenSSH certificates", () => {
  it.each([
    ["ed25519", []],
    ["ecdsa", ["-b", "256"]],
    ["rsa", ["-b", "2048"]],
  ])("reads what ssh-keygen signs for a %s host key", async (type, bits) => {
    const key = join(dir, `host_${type}`);
    execFileSync("ssh-keygen", ["-q", "-t", type, ...bits, "-N", "", "-f", key]);
    execFileSync("ssh-keygen", [
      "-q",
      "-s",
      join(dir, "ca"),
      "-h",
      "-I",
      "host",
      "-n",
      "web-1,10.0.0.5",
      "-V",
      "20200101:20300101",
      `${key}.pub`,
    ]);
    const certificate = parseSshCertificate(await readFile(`${key}-cert.pub`, "utf8"));
    expect(certificate.certType).toBe("host");
    expect(certificate.principals).toEqual(["web-1", "10.0.0.5"]);
    expect(certificate.keyBlob.equals(keyBlobOf(await readFile(`${key}.pub`, "utf8")))).toBe(true);
    expect(certificate.signatureKey.equals(keyBlobOf(await readFile(join(dir, "ca.pub"), "utf8")))).toBe(
      true,
    );
    expect(certificate.validAfter.getUTCFullYear()).toBe(2020);
    expect(certificate.validBefore.getUTCFullYear()).toBe(2030);
  });

  it("refuses what is not a certificate", () => {
    expect(() => parseSshCertificate("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB")).toThrow(
      /not an OpenSSH certificate/,
    );
    expect(() => parseSshCertificate("ssh-ed25519-cert-v01@openssh.com AAAA")).toThrow();
    expect(() => parseSshCertificate("")).toThrow();
  });
});
