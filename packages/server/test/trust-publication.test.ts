/**
 * What each authority asks relying parties to trust, over HTTP: GetCertificateAuthority lists
 * every key with its role and until when, and the anonymous `GET /v1/trust/<ca id>/<document>`
 * serves the exact TrustedUserCAKeys lines, `@cert-authority` lines and X.509 bundle, made from
 * the same list as the `caPublicKey` daemons write for sshd. Bad input and unknown ids refused.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sshEd25519PublicKey } from "./support/ssh-keys.js";

const run = promisify(execFile);
let server: TestServer;
let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  owner = await signUpWithWorkspace(server.url, "trust");
  dir = await mkdtemp(join(tmpdir(), "wap-trust-"));
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Authority {
  id: string;
  publicKey: string;
  certificate: string;
  trustUrl: string;
  trustedKeys: { role: string; publicKey: string; certificate?: string; trustedUntil?: string }[];
}

const api = (method: string, path: string, body?: unknown) =>
  restCall(server.url, method, `/v1/workspaces/${owner.workspaceId}${path}`, body, {
    token: owner.accessToken,
  });

async function authority(authorityType: string, name: string): Promise<Authority> {
  const made = await api("POST", "/certificate_authorities", {
    name,
    keyType: "CERTIFICATE_KEY_TYPE_ED25519",
    authorityType,
  });
  expect(made.status).toBe(200);
  return made.body.certificateAuthority as Authority;
}

const rollover = async (id: string) => {
  const rolled = await api("POST", `/certificate_authorities/${id}:rollover`, {});
  expect(rolled.status, JSON.stringify(rolled.body)).toBe(200);
  return rolled.body.certificateAuthority as Authority;
};

/** Anonymous: no credentials at all. */
const published = (caId: string, document: string, query = "") =>
  fetch(`${server.url}/v1/trust/${caId}/${document}${query}`);

describe("an SSH authority's published trust", () => {
  it("after a rollover lists the new key and the retired one, and serves both as sshd and known_hosts lines", async () => {
    const ca = await authority("AUTHORITY_TYPE_SSH", "ssh");
    expect(ca.trustUrl.endsWith(`/v1/trust/${ca.id}`)).toBe(true);
    expect(ca.trustedKeys.map((k) => [k.role, k.publicKey])).toEqual([
      ["TRUSTED_KEY_ROLE_CURRENT", ca.publicKey],
    ]);
    const rolled = await rollover(ca.id);

    const got = (await api("GET", `/certificate_authorities/${ca.id}`)).body
      .certificateAuthority as Authority;
    expect(got.trustedKeys.map((k) => [k.role, k.publicKey])).toEqual([
      ["TRUSTED_KEY_ROLE_CURRENT", rolled.publicKey],
      ["TRUSTED_KEY_ROLE_RETIRED", ca.publicKey],
    ]);
    for (const key of got.trustedKeys) expect(Date.parse(key.trustedUntil!)).toBeGreaterThan(Date.now());

    // The lines a daemon writes for sshd (SignSSHCertificate's caPublicKey) are the published ones.
    const signed = await api("POST", "/sign-ssh", { caId: ca.id, publicKey: sshEd25519PublicKey() });
    expect(signed.status).toBe(200);
    const userCaKeys = await published(ca.id, "user_ca_keys");
    expect(userCaKeys.status).toBe(200);
    expect(userCaKeys.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await userCaKeys.text()).toBe(`${signed.body.caPublicKey}\n`);
    expect(signed.body.caPublicKey.split("\n")).toEqual([rolled.publicKey, ca.publicKey]);

    const knownHosts = await published(ca.id, "known_hosts", "?hosts=*.corp.example.com,10.0.0.*");
    expect(await knownHosts.text()).toBe(
      [rolled.publicKey, ca.publicKey]
        .map((key) => `@cert-authority *.corp.example.com,10.0.0.* ${key}\n`)
        .join(""),
    );
    // Without a pattern, every host (documented as the broad choice).
    expect(
      (await (await published(ca.id, "known_hosts")).text()).startsWith(
        `@cert-authority * ${rolled.publicKey}`,
      ),
    ).toBe(true);
  });

  it("refuses a host pattern that is not one, naming the field; 404 for unknown ids, documents and kinds", async () => {
    const ca = await authority("AUTHORITY_TYPE_SSH", "ssh-refusals");
    for (const hosts of ["a b", "*\n@cert-authority * ssh-ed25519 AAAA", "", "x".repeat(1025), "a,,b"]) {
      const refused = await published(ca.id, "known_hosts", `?hosts=${encodeURIComponent(hosts)}`);
      expect(refused.status, hosts).toBe(400);
      const status = (await refused.json()) as {
        code: number;
        message: string;
        details: { fieldViolations?: { field: string }[] }[];
      };
      expect(status.code).toBe(3);
      expect(status.message).toContain("hosts: a comma-separated list of known_hosts patterns");
    }
    for (const path of [
      `${ca.id}/bundle.pem`,
      `${crypto.randomUUID()}/user_ca_keys`,
      `${ca.id}/private_key`,
      "not-an-id/known_hosts",
    ]) {
      const missing = await fetch(`${server.url}/v1/trust/${path}`);
      expect(missing.status, path).toBe(404);
      expect(((await missing.json()) as { code: number }).code).toBe(5);
    }
  });
});

describe("an X.509 authority's published trust", () => {
  it("serves the PEM bundle of its current and retired CA certificates, which verifies leaves of both", async () => {
    const ca = await authority("AUTHORITY_TYPE_X509", "tls");
    // A client certificate names its user.
    const me = await restCall(server.url, "GET", "/v1/whoami", undefined, { token: owner.accessToken });
    const key = join(dir, "leaf.key");
    const csrFile = join(dir, "leaf.csr");
    await run("openssl", [
      "req",
      "-new",
      "-newkey",
      "ed25519",
      "-nodes",
      "-keyout",
      key,
      "-out",
      csrFile,
      "-subj",
      `/CN=${me.body.user.id}`,
    ]);
    const csr = await readFile(csrFile, "utf8");
    const sign = async () => {
      const res = await api("POST", "/sign-x509", {
        caId: ca.id,
        csr,
        usage: "X509_USAGE_CLIENT_AUTH",
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.certificate as string;
    };
    const before = await sign();
    const rolled = await rollover(ca.id);
    const after = await sign();
    const bundle = await published(ca.id, "bundle.pem");
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get("content-type")).toBe("application/pem-certificate-chain");
    const text = await bundle.text();
    const certificates = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
    expect(certificates.map((c) => c.replace(/\s/g, ""))).toEqual(
      [rolled.certificate, ca.certificate].map((c) => c.trim().replace(/\s/g, "")),
    );
    const bundleFile = join(dir, "bundle.pem");
    await writeFile(bundleFile, text);
    for (const [name, leaf] of [
      ["before.pem", before],
      ["after.pem", after],
    ] as const) {
      const file = join(dir, name);
      await writeFile(file, leaf);
      expect((await run("openssl", ["verify", "-CAfile", bundleFile, file])).stdout).toContain(": OK");
    }
    for (const document of ["user_ca_keys", "known_hosts"]) {
      expect((await published(ca.id, document)).status).toBe(404);
    }
  });
});
