/**
 * Property tests: malformed public keys and CSRs fed through the RPCs (`platform.invoke`) are
 * answered `invalid_argument`, never `internal` or a crash. A mutation that happens to leave a
 * valid input may be signed; nothing else may come back.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  AuthorityType,
  CertificateService,
  SignSSHCertificateRequest_CertificateType as CertType,
} from "@wap/api";
import * as fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlatformError } from "../src/errors.js";
import { createAuthority, type Owner, run, scratch, subjectKey } from "./support/certificates.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let sshCaId: string;
let x509CaId: string;
let files: Awaited<ReturnType<typeof scratch>>;
const validKeys: string[] = [];
const validCsrs: string[] = [];

beforeAll(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  files = await scratch();
  sshCaId = (await createAuthority(t, ada, { type: "ed25519" })).id;
  x509CaId = (await createAuthority(t, ada, { type: "ed25519" }, { authorityType: AuthorityType.X509 })).id;
  for (const spec of [
    { type: "ed25519" },
    { type: "ecdsa", curve: "P-256" },
    { type: "ecdsa", curve: "P-521" },
    { type: "rsa", bits: 2048 },
  ] as const) {
    validKeys.push((await subjectKey(spec)).line);
  }
  for (const alg of [
    ["ED25519"],
    ["EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    ["RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
  ]) {
    const key = join(files.dir, `${alg[0]}.key`);
    const csr = join(files.dir, `${alg[0]}.csr`);
    await run("openssl", ["genpkey", "-algorithm", ...alg, "-out", key]);
    await run("openssl", ["req", "-new", "-key", key, "-subj", `/CN=${ada.caller.userId}`, "-out", csr]);
    validCsrs.push(await readFile(csr, "utf8"));
  }
}, 60_000);

afterAll(async () => {
  await t.platform.close();
  await files.remove();
});

/** Resolves to "ok" or the error code; anything that is not a PlatformError fails the property. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    return error.code;
  }
}

/** Edits of a valid text: flips, cuts, insertions, swaps of whole tokens. */
function mutations(valid: fc.Arbitrary<string>) {
  return fc.oneof(
    fc.tuple(valid, fc.nat(), fc.integer({ min: 1, max: 255 })).map(([s, at, x]) => {
      const i = at % s.length;
      return s.slice(0, i) + String.fromCharCode(s.charCodeAt(i) ^ x) + s.slice(i + 1);
    }),
    fc
      .tuple(valid, fc.nat(), fc.nat())
      .map(([s, a, b]) => s.slice(Math.min(a, b) % s.length, (Math.max(a, b) % s.length) + 1)),
    fc
      .tuple(valid, fc.nat(), fc.string({ unit: "binary", minLength: 1, maxLength: 20 }))
      .map(([s, at, junk]) => s.slice(0, at % s.length) + junk + s.slice(at % s.length)),
    fc.tuple(valid, fc.base64String({ minLength: 4, maxLength: 400 })).map(([s, b64]) => {
      const parts = s.split(" ");
      return [parts[0], b64, ...parts.slice(2)].join(" ");
    }),
    fc.tuple(valid, fc.uint8Array({ minLength: 0, maxLength: 300 })).map(([s, bytes]) => {
      const parts = s.split(" ");
      return `${parts[0]} ${Buffer.from(bytes).toString("base64")}`;
    }),
  );
}

describe("fuzzing through the RPCs", () => {
  it("SignSSHCertificate: malformed public keys are invalid_argument, never internal", async () => {
    const keys = fc.oneof(
      { weight: 4, arbitrary: mutations(fc.constantFrom(...validKeys)) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 300 }) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(
            fc.constantFrom(
              "ssh-ed25519",
              "ssh-rsa",
              "ecdsa-sha2-nistp256",
              "ecdsa-sha2-nistp384",
              "ssh-dss",
              "sk-ssh-ed25519@openssh.com",
            ),
            fc.uint8Array({ maxLength: 600 }),
          )
          .map(([type, bytes]) => `${type} ${Buffer.from(bytes).toString("base64")}`),
      },
    );
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(keys, async (publicKey) => {
        const code = await outcome(
          t.call(ada.caller, CertificateService.method.signSSHCertificate, {
            workspaceId: ada.workspaceId,
            caId: sshCaId,
            type: CertType.USER,
            publicKey,
          }),
        );
        seen.set(code, (seen.get(code) ?? 0) + 1);
        expect(["ok", "invalid_argument"]).toContain(code);
      }),
      { numRuns: 400 },
    );
    expect(seen.get("invalid_argument") ?? 0).toBeGreaterThan(200);
  });

  it("SignX509Certificate: malformed CSRs are invalid_argument, never internal", async () => {
    const pemBody = (pem: string) => pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
    const wrap = (body: string) =>
      `-----BEGIN CERTIFICATE REQUEST-----\n${body}\n-----END CERTIFICATE REQUEST-----\n`;
    const csrs = fc.oneof(
      { weight: 3, arbitrary: mutations(fc.constantFrom(...validCsrs)) },
      // Flips inside the DER, re-encoded so the PEM itself is well-formed.
      {
        weight: 3,
        arbitrary: fc
          .tuple(
            fc.constantFrom(...validCsrs),
            fc.nat(),
            fc.integer({ min: 1, max: 255 }),
            fc.nat({ max: 40 }),
          )
          .map(([pem, at, x, cut]) => {
            const der = Buffer.from(pemBody(pem), "base64");
            der[at % der.length]! ^= x;
            return wrap(der.subarray(0, der.length - cut).toString("base64"));
          }),
      },
      {
        weight: 1,
        arbitrary: fc.uint8Array({ maxLength: 700 }).map((b) => wrap(Buffer.from(b).toString("base64"))),
      },
      { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 300 }) },
    );
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(csrs, async (csr) => {
        const code = await outcome(
          t.call(ada.caller, CertificateService.method.signX509Certificate, {
            workspaceId: ada.workspaceId,
            caId: x509CaId,
            csr,
          }),
        );
        seen.set(code, (seen.get(code) ?? 0) + 1);
        expect(["ok", "invalid_argument"]).toContain(code);
      }),
      { numRuns: 400 },
    );
    expect(seen.get("invalid_argument") ?? 0).toBeGreaterThan(200);
  });
});
