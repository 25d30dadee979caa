/**
 * The public CRL endpoint over HTTP: anonymous GET of `/v1/crl/<ca id>.crl` answers the X.509
 * authority's DER CRL (read by openssl), and 404 for anything else; the ledger and revocation RPCs
 * over their REST paths.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
let server: TestServer;
let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  owner = await signUpWithWorkspace(server.url);
  dir = await mkdtemp(join(tmpdir(), "wap-crl-"));
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

const createCa = async (authorityType: string, name: string) => {
  const res = await restCall(
    server.url,
    "POST",
    `/v1/workspaces/${owner.workspaceId}/certificate_authorities`,
    { name, keyType: "CERTIFICATE_KEY_TYPE_ED25519", authorityType },
    { token: owner.accessToken },
  );
  expect(res.status).toBe(200);
  return res.body.certificateAuthority as { id: string; crlUrl: string };
};

describe("GET /v1/crl/<ca id>.crl", () => {
  it("answers an X.509 authority's CRL to anyone, as DER openssl reads; 404 otherwise", async () => {
    const ca = await createCa("AUTHORITY_TYPE_X509", "tls");
    expect(ca.crlUrl.endsWith(`/v1/crl/${ca.id}.crl`)).toBe(true);
    const res = await fetch(`${server.url}/v1/crl/${ca.id}.crl`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pkix-crl");
    const file = join(dir, "ca.crl");
    await writeFile(file, new Uint8Array(await res.arrayBuffer()));
    const { stdout } = await run("openssl", ["crl", "-inform", "DER", "-in", file, "-noout", "-text"]);
    expect(stdout).toMatch(/CN ?= ?tls/);
    expect(stdout).toContain("No Revoked Certificates");

    const ssh = await createCa("AUTHORITY_TYPE_SSH", "ssh");
    for (const path of [`/v1/crl/${ssh.id}.crl`, `/v1/crl/${crypto.randomUUID()}.crl`, "/v1/crl/nope.crl"]) {
      const missing = await fetch(`${server.url}${path}`);
      expect(missing.status, path).toBe(404);
      // A google.rpc.Status body: 5 is NOT_FOUND.
      expect(((await missing.json()) as { code: number }).code).toBe(5);
    }
  });

  it("serves the ledger, revocation and the revocation list over REST", async () => {
    const ca = await createCa("AUTHORITY_TYPE_SSH", "users");
    const listed = await restCall(
      server.url,
      "GET",
      `/v1/workspaces/${owner.workspaceId}/issued_certificates?caId=${ca.id}&revocation=REVOCATION_FILTER_REVOKED`,
      undefined,
      { token: owner.accessToken },
    );
    expect(listed.status).toBe(200);
    expect(listed.body.certificates ?? []).toEqual([]);
    const revoke = await restCall(
      server.url,
      "POST",
      `/v1/workspaces/${owner.workspaceId}/issued_certificates:revoke`,
      { caId: ca.id },
      { token: owner.accessToken },
    );
    expect(revoke.status).toBe(400);
    expect(revoke.body.message).toContain("serial");
    const list = await restCall(
      server.url,
      "GET",
      `/v1/workspaces/${owner.workspaceId}/certificate_authorities/${ca.id}/revocation_list`,
      undefined,
      { token: owner.accessToken },
    );
    expect(list.status).toBe(200);
    expect(list.body.format).toBe("openssh-krl");
    const krl = Buffer.from(list.body.revocationList as string, "base64");
    expect(krl.subarray(0, 8).toString("latin1")).toBe("SSHKRL\n\0");
  });
});
