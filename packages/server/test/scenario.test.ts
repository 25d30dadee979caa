/**
 * The vertical slice end to end over Connect (HTTP/2, JSON): sign-up and sessions, workspaces,
 * SSH and X.509 certificate authorities, service accounts and their tokens.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AuthorityType,
  AuthService,
  CertificateKeyType,
  CertificateService,
  ServiceAccountService,
  UserService,
  WorkspaceService,
} from "@wap/api";
import { createManualClock } from "@wap/core/internal";
import { bearer, clientFor, clientsFor, transportFor } from "@wap/test-kit/clients";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

async function codeOf(call: Promise<unknown>): Promise<Code> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error).code;
  }
  throw new Error("the call succeeded but an error was expected");
}

describe("the vertical slice over Connect", () => {
  let server: TestServer;
  let clients: ReturnType<typeof makeClients>;
  const email = "alice@example.com";
  const password = "correct horse battery staple";
  let token = "";
  let workspaceId = "";

  const makeClients = (baseUrl: string) =>
    clientsFor(transportFor("connect-json-h2", baseUrl), {
      auth: AuthService,
      user: UserService,
      workspaces: WorkspaceService,
      cas: CertificateService,
      accounts: ServiceAccountService,
    });

  beforeAll(async () => {
    server = await startTestServer();
    clients = makeClients(server.url);
  });
  afterAll(async () => {
    await server.close();
  });

  it("registers, signs in (setting the session cookie) and answers Whoami", async () => {
    await clients.auth.register({ name: "Alice Example", email, username: "alice", password });
    let setCookie = "";
    const login = await clients.auth.login(
      { email, password },
      { onHeader: (headers) => (setCookie = headers.get("set-cookie") ?? "") },
    );
    expect(login.accessToken).toMatch(/^v4\.public\./);
    expect(login.refreshToken).not.toBe("");
    expect(setCookie).toContain(`session=${login.accessToken}; Max-Age=900; Path=/; HttpOnly; SameSite=Lax`);
    expect(setCookie).toContain(`refresh=${login.refreshToken}; Max-Age=`);
    expect(setCookie).toMatch(
      /refresh=[^;]+; Max-Age=\d+; Path=\/platform\.v1\.AuthService\/RefreshToken; HttpOnly; SameSite=Strict/,
    );
    token = login.accessToken;

    const me = await clients.user.whoami({}, bearer(token));
    expect(me.user?.email).toBe(email);
    expect(me.user?.username).toBe("alice");
  });

  it("refuses a wrong password and a missing credential", async () => {
    expect(await codeOf(clients.auth.login({ email, password: "wrong password" }))).toBe(
      Code.Unauthenticated,
    );
    expect(await codeOf(clients.user.whoami({}))).toBe(Code.Unauthenticated);
  });

  it("creates, reads, lists and updates a workspace (the creator is its owner)", async () => {
    const created = await clients.workspaces.createWorkspace(
      { name: "Acme", description: "first" },
      bearer(token),
    );
    workspaceId = created.workspace?.id ?? "";
    expect(workspaceId).toMatch(/^[0-9a-f-]{36}$/);

    const got = await clients.workspaces.getWorkspace({ workspaceId }, bearer(token));
    expect(got.workspace?.name).toBe("Acme");
    const listed = await clients.workspaces.listWorkspaces({}, bearer(token));
    expect(listed.workspaces.map((w) => w.id)).toContain(workspaceId);

    const updated = await clients.workspaces.updateWorkspace(
      { workspaceId, name: "Acme Corp" },
      bearer(token),
    );
    expect(updated.workspace?.name).toBe("Acme Corp");
    // An omitted field is left as it was.
    expect(updated.workspace?.description).toBe("first");
  });

  let sshCaId = "";
  let x509CaId = "";

  it("creates an SSH Ed25519 authority (the first SSH one becomes the default)", async () => {
    const { certificateAuthority: ca } = await clients.cas.createCertificateAuthority(
      {
        workspaceId,
        name: "ssh-users",
        keyType: CertificateKeyType.ED25519,
        authorityType: AuthorityType.SSH,
      },
      bearer(token),
    );
    sshCaId = ca?.id ?? "";
    expect(ca?.publicKey).toMatch(/^ssh-ed25519 AAAA/);
    expect(ca?.isDefault).toBe(true);
    expect(ca?.isActive).toBe(true);
    expect(ca?.authorityType).toBe(AuthorityType.SSH);
  });

  it("creates an X.509 authority whose certificate openssl accepts", async () => {
    const { certificateAuthority: ca } = await clients.cas.createCertificateAuthority(
      {
        workspaceId,
        name: "x509-issuing",
        keyType: CertificateKeyType.ECDSA,
        keyBits: 256,
        authorityType: AuthorityType.X509,
      },
      bearer(token),
    );
    x509CaId = ca?.id ?? "";
    expect(ca?.certificate).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const dir = mkdtempSync(join(tmpdir(), "wap-x509-"));
    try {
      writeFileSync(join(dir, "ca.pem"), ca?.certificate ?? "");
      const text = execFileSync("openssl", ["x509", "-in", join(dir, "ca.pem"), "-noout", "-text"], {
        encoding: "utf8",
      });
      expect(text).toContain("CA:TRUE");
      // Self-signed: it verifies against itself.
      const verified = execFileSync(
        "openssl",
        ["verify", "-CAfile", join(dir, "ca.pem"), join(dir, "ca.pem")],
        {
          encoding: "utf8",
        },
      );
      expect(verified).toContain("OK");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gets, lists, updates and deletes authorities", async () => {
    const got = await clients.cas.getCertificateAuthority({ workspaceId, id: sshCaId }, bearer(token));
    expect(got.certificateAuthority?.name).toBe("ssh-users");
    const listed = await clients.cas.listCertificateAuthorities({ workspaceId }, bearer(token));
    expect(listed.certificateAuthorities.map((c) => c.id).sort()).toEqual([sshCaId, x509CaId].sort());

    const updated = await clients.cas.updateCertificateAuthority(
      { workspaceId, id: x509CaId, description: "issuing CA", isActive: false },
      bearer(token),
    );
    expect(updated.certificateAuthority?.description).toBe("issuing CA");
    expect(updated.certificateAuthority?.isActive).toBe(false);
    expect(updated.certificateAuthority?.name).toBe("x509-issuing");

    await clients.cas.deleteCertificateAuthority({ workspaceId, id: x509CaId }, bearer(token));
    expect(
      await codeOf(clients.cas.getCertificateAuthority({ workspaceId, id: x509CaId }, bearer(token))),
    ).toBe(Code.NotFound);
  });

  it("service-account tokens act within their role: viewer reads, editor writes", async () => {
    const viewer = await clients.accounts.createServiceAccount(
      { workspaceId, name: "ci-reader", roleName: "viewer", tags: ["ci"] },
      bearer(token),
    );
    const editor = await clients.accounts.createServiceAccount(
      { workspaceId, name: "ci-writer", roleName: "editor" },
      bearer(token),
    );
    expect(viewer.token).not.toBe("");
    expect(viewer.serviceAccount?.roleName).toBe("viewer");
    expect(viewer.serviceAccount?.lastUsedAt).toBeUndefined();

    const seen = await clients.cas.listCertificateAuthorities({ workspaceId }, bearer(viewer.token));
    expect(seen.certificateAuthorities.map((c) => c.id)).toEqual([sshCaId]);
    expect(
      await codeOf(
        clients.cas.createCertificateAuthority(
          { workspaceId, name: "nope", keyType: CertificateKeyType.ED25519 },
          bearer(viewer.token),
        ),
      ),
    ).toBe(Code.PermissionDenied);

    const made = await clients.cas.createCertificateAuthority(
      { workspaceId, name: "made-by-ci", keyType: CertificateKeyType.ED25519 },
      bearer(editor.token),
    );
    expect(made.certificateAuthority?.isDefault).toBe(false);

    // The token was used: lastUsedAt is recorded.
    const reread = await clients.accounts.getServiceAccount(
      { workspaceId, id: viewer.serviceAccount?.id ?? "" },
      bearer(token),
    );
    expect(reread.serviceAccount?.lastUsedAt).toBeDefined();

    const page = await clients.accounts.listServiceAccounts({ workspaceId }, bearer(token));
    expect(page.total).toBe(2);
    const renamed = await clients.accounts.updateServiceAccount(
      { workspaceId, id: editor.serviceAccount?.id ?? "", description: "writes CAs" },
      bearer(token),
    );
    expect(renamed.serviceAccount?.description).toBe("writes CAs");

    // A deleted account's token stops working at once.
    await clients.accounts.deleteServiceAccount(
      { workspaceId, id: viewer.serviceAccount?.id ?? "" },
      bearer(token),
    );
    expect(await codeOf(clients.cas.listCertificateAuthorities({ workspaceId }, bearer(viewer.token)))).toBe(
      Code.Unauthenticated,
    );
  });

  it("Logout ends the session: its access token stops working", async () => {
    const login = await clients.auth.login({ email, password });
    await clients.user.whoami({}, bearer(login.accessToken));
    let setCookie = "";
    await clients.auth.logout(
      {},
      { ...bearer(login.accessToken), onHeader: (h) => (setCookie = h.get("set-cookie") ?? "") },
    );
    expect(setCookie).toContain("session=;");
    expect(setCookie).toContain("Max-Age=0");
    expect(await codeOf(clients.user.whoami({}, bearer(login.accessToken)))).toBe(Code.Unauthenticated);
    // Other sessions are untouched.
    await clients.user.whoami({}, bearer(token));
  });

  it("RefreshToken rotates, and reusing a spent refresh token ends the session", async () => {
    const login = await clients.auth.login({ email, password });
    const first = await clients.auth.refreshToken({ refreshToken: login.refreshToken });
    expect(first.refreshToken).not.toBe(login.refreshToken);
    await clients.user.whoami({}, bearer(first.accessToken));

    const second = await clients.auth.refreshToken({ refreshToken: first.refreshToken });
    await clients.user.whoami({}, bearer(second.accessToken));

    // The first refresh token was spent: presenting it again is treated as theft.
    expect(await codeOf(clients.auth.refreshToken({ refreshToken: login.refreshToken }))).toBe(
      Code.Unauthenticated,
    );
    expect(await codeOf(clients.auth.refreshToken({ refreshToken: second.refreshToken }))).toBe(
      Code.Unauthenticated,
    );
    expect(await codeOf(clients.user.whoami({}, bearer(second.accessToken)))).toBe(Code.Unauthenticated);
  });

  it("deletes the workspace; afterwards it is gone for its owner too", async () => {
    await clients.workspaces.deleteWorkspace({ workspaceId }, bearer(token));
    expect(await codeOf(clients.workspaces.getWorkspace({ workspaceId }, bearer(token)))).toBe(Code.NotFound);
  });

  it("never logs a token, a password or a cookie", () => {
    const logs = server.logs.join("\n");
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(password);
    expect(logs).not.toMatch(/wapr_|v4\.public\.|session=/);
  });
});

describe("service-account expiry (with a manual clock)", () => {
  const clock = createManualClock(new Date());
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ platformOptions: { clock } });
  });
  afterAll(async () => {
    await server.close();
  });

  it("a token stops working once expiresAt passes", async () => {
    const transport = transportFor("connect-json-h2", server.url);
    const auth = clientFor(AuthService, transport);
    const workspaces = clientFor(WorkspaceService, transport);
    const accounts = clientFor(ServiceAccountService, transport);
    await auth.register({
      name: "Eve Example",
      email: "eve@example.com",
      username: "eve",
      password: "long enough pw",
    });
    const { accessToken } = await auth.login({ email: "eve@example.com", password: "long enough pw" });
    const { workspace } = await workspaces.createWorkspace({ name: "expiring" }, bearer(accessToken));
    const workspaceId = workspace?.id ?? "";
    const expiresAt = new Date(clock.now().getTime() + 60 * 60 * 1000);
    const created = await accounts.createServiceAccount(
      { workspaceId, name: "short-lived", expiresAt: timestampFromDate(expiresAt) },
      bearer(accessToken),
    );
    expect(timestampDate(created.serviceAccount?.expiresAt ?? timestampFromDate(new Date(0))).getTime()).toBe(
      expiresAt.getTime(),
    );
    await workspaces.getWorkspace({ workspaceId }, bearer(created.token));

    clock.advance(2 * 60 * 60 * 1000);
    expect(await codeOf(workspaces.getWorkspace({ workspaceId }, bearer(created.token)))).toBe(
      Code.Unauthenticated,
    );
  });
});
