/**
 * Which stored certificate `wap ssh` may reuse: certificates made by the real ssh-keygen with the
 * key ids the server gives (`…:request:<id>` under an access request), read back from a real
 * config folder.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigStore } from "../config.js";
import {
  certificatePaths,
  currentCertificate,
  removeEndedRequestCertificates,
  requestOfKeyId,
} from "./certificate-files.js";

const caId = "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e77";
const requestA = "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e01";
const requestB = "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e02";
const usual = `ws:user:u:${"c".repeat(8)}`;

let dir: string;
let store: ConfigStore;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-cli-certs-"));
  store = new ConfigStore(dir);
  await mkdir(store.sshDir, { recursive: true });
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "ca")]);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A key and its certificate, signed by the test CA with `keyId`, where `paths` says. */
function storeCertificate(paths: ReturnType<typeof certificatePaths>, keyId: string) {
  for (const file of [paths.privateKey, paths.publicKey, paths.certificate]) rmSync(file, { force: true });
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", paths.privateKey]);
  execFileSync("ssh-keygen", [
    "-q",
    "-s",
    join(dir, "ca"),
    "-I",
    keyId,
    "-n",
    "u",
    "-V",
    "+1h",
    paths.publicKey,
  ]);
}

describe("certificates bound to an access request", () => {
  it("the request is read from the end of the key id, and only a UUID", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.string(), (id, prefix) => {
        expect(requestOfKeyId(`${prefix}:request:${id}`)).toBe(id);
        expect(requestOfKeyId(`${prefix}:request:${id}x`)).toBeUndefined();
        expect(requestOfKeyId(`${prefix}:request:${id}:more`)).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(fc.string(), (keyId) => {
        if (!keyId.includes(":request:")) expect(requestOfKeyId(keyId)).toBeUndefined();
      }),
    );
    expect(requestOfKeyId(usual)).toBeUndefined();
  });

  it("are kept apart by the request's id, which must be a UUID", () => {
    expect(certificatePaths(store, caId, { requestId: requestA }).certificate).toBe(
      join(store.sshDir, `${caId}-request-${requestA}-cert.pub`),
    );
    for (const id of ["../x", "", `${requestA}/x`, "not-an-id"])
      expect(() => certificatePaths(store, caId, { requestId: id })).toThrow(
        /access request .* is not an id/,
      );
  });

  it("are reused only for the request their key id names; a standing login never reuses one", async () => {
    const forA = certificatePaths(store, caId, { requestId: requestA });
    storeCertificate(forA, `${usual}:request:${requestA}`);
    expect((await currentCertificate(store, {}, caId, 0, undefined, requestA))?.info.keyId).toBe(
      `${usual}:request:${requestA}`,
    );
    // Another request's certificate where request A's goes: not reused.
    storeCertificate(forA, `${usual}:request:${requestB}`);
    expect(await currentCertificate(store, {}, caId, 0, undefined, requestA)).toBeUndefined();
    // A request's certificate where the standing one goes: not reused for a standing login.
    const standing = certificatePaths(store, caId);
    storeCertificate(standing, `${usual}:request:${requestA}`);
    expect(await currentCertificate(store, {}, caId, 0)).toBeUndefined();
    storeCertificate(standing, usual);
    expect((await currentCertificate(store, {}, caId, 0))?.info.keyId).toBe(usual);
    // And a certificate bound to no request is not one for request A.
    storeCertificate(forA, usual);
    expect(await currentCertificate(store, {}, caId, 0, undefined, requestA)).toBeUndefined();
  });

  it("the files of requests no longer approved go; those of approved ones, other authorities and standing logins stay", async () => {
    const otherCa = "0193f1c2-7a0e-7d4b-9d55-0a3c2f9b1e99";
    storeCertificate(certificatePaths(store, caId, { requestId: requestA }), `${usual}:request:${requestA}`);
    storeCertificate(certificatePaths(store, caId, { requestId: requestB }), `${usual}:request:${requestB}`);
    storeCertificate(
      certificatePaths(store, otherCa, { requestId: requestB }),
      `${usual}:request:${requestB}`,
    );
    storeCertificate(certificatePaths(store, caId), usual);
    await writeFile(join(store.sshDir, `${caId}-request-not-an-id`), "kept\n");
    await removeEndedRequestCertificates(store, caId, new Set([requestA]));
    expect((await readdir(store.sshDir)).sort()).toEqual(
      [
        caId,
        `${caId}-cert.pub`,
        `${caId}.pub`,
        `${caId}-request-${requestA}`,
        `${caId}-request-${requestA}-cert.pub`,
        `${caId}-request-${requestA}.pub`,
        `${caId}-request-not-an-id`,
        `${otherCa}-request-${requestB}`,
        `${otherCa}-request-${requestB}-cert.pub`,
        `${otherCa}-request-${requestB}.pub`,
      ].sort(),
    );
  });
});
