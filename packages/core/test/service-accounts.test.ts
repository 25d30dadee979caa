import { createHash, randomBytes } from "node:crypto";
import { CertificateKeyType, CertificateService, ServiceAccountService, WorkspaceService } from "@wap/api";
import * as fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { serviceAccountTokenProfile } from "../src/auth/service-account-tokens.js";
import { loadSigningKey } from "../src/auth/signing-keys.js";
import { createMasterKeyStore, generateMasterKey, type KeyStore } from "../src/index.js";
import { createSignedTokenSigner } from "../src/tokens/paseto.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let keyStore: KeyStore;
let ada: Awaited<ReturnType<TestPlatform["owner"]>>;
beforeEach(async () => {
  keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
  t = await createTestPlatform({ keyStore });
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const createAccount = (request: Record<string, unknown>) =>
  t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
    workspaceId: ada.workspaceId,
    name: "ci",
    ...request,
  });

describe("service accounts", () => {
  it("returns the token once and keeps only its hash", async () => {
    const res = await createAccount({ name: "deploy-bot", roleName: "editor", tags: ["ci"] });
    expect(res.token).toMatch(/^v4\.public\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const claims = claimsOf(res.token);
    expect(claims).toMatchObject({
      sub: res.serviceAccount!.id,
      wid: ada.workspaceId,
      typ: "service_account",
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(claims.exp).toBeUndefined();
    const stored = await t.storage.serviceAccounts.findById(ada.workspaceId, res.serviceAccount!.id);
    expect(stored?.tokenHash).toBe(createHash("sha256").update(res.token).digest("hex"));
    const signature = Buffer.from(res.token.split(".")[2]!, "base64url").subarray(-64).toString("hex");
    expect(JSON.stringify(stored)).not.toContain(signature);
    expect(JSON.stringify(stored)).not.toContain(res.token.split(".")[2]!);
    const { serviceAccount } = await t.call(ada.caller, ServiceAccountService.method.getServiceAccount, {
      workspaceId: ada.workspaceId,
      id: res.serviceAccount!.id,
    });
    expect(serviceAccount).toMatchObject({ name: "deploy-bot", roleName: "editor", tags: ["ci"] });
  });

  it("a viewer token reads but cannot write; an editor token writes inside its workspace only", async () => {
    const viewer = await createAccount({ name: "reader" });
    const editor = await createAccount({ name: "writer", roleName: "editor" });
    const asViewer = (await t.platform.authenticate({ bearer: viewer.token })).caller;
    const asEditor = (await t.platform.authenticate({ bearer: editor.token })).caller;
    expect(asViewer).toMatchObject({ kind: "service_account", role: "viewer", workspaceId: ada.workspaceId });

    await t.call(asViewer, WorkspaceService.method.getWorkspace, { workspaceId: ada.workspaceId });
    await expectCode(
      t.call(asViewer, CertificateService.method.createCertificateAuthority, {
        workspaceId: ada.workspaceId,
        name: "nope",
        keyType: CertificateKeyType.ED25519,
      }),
      "permission_denied",
    );
    await t.call(asEditor, CertificateService.method.createCertificateAuthority, {
      workspaceId: ada.workspaceId,
      name: "yes",
      keyType: CertificateKeyType.ED25519,
    });
    // Managing service accounts is an admin's job, not an editor's.
    await expectCode(createAccountAs(asEditor), "permission_denied");
    const bob = await t.owner();
    await expectCode(
      t.call(asEditor, WorkspaceService.method.getWorkspace, { workspaceId: bob.workspaceId }),
      "not_found",
    );
    const { workspaces } = await t.call(asEditor, WorkspaceService.method.listWorkspaces, {});
    expect(workspaces.map((w) => w.id)).toEqual([ada.workspaceId]);
  });

  it("stops working when deleted or expired, and records lastUsedAt", async () => {
    const expiring = await createAccount({
      name: "temp",
      expiresAt: { seconds: BigInt(Math.floor(t.clock.now().getTime() / 1000) + 3600), nanos: 0 },
    });
    await t.platform.authenticate({ bearer: expiring.token });
    const used = await t.storage.serviceAccounts.findById(ada.workspaceId, expiring.serviceAccount!.id);
    expect(used?.lastUsedAt).toEqual(t.clock.now());
    t.clock.advance(3600 * 1000);
    await expectCode(t.platform.authenticate({ bearer: expiring.token }), "unauthenticated");

    const doomed = await createAccount({ name: "doomed" });
    await t.call(ada.caller, ServiceAccountService.method.deleteServiceAccount, {
      workspaceId: ada.workspaceId,
      id: doomed.serviceAccount!.id,
    });
    await expectCode(t.platform.authenticate({ bearer: doomed.token }), "unauthenticated");
    // A forged secret for a live account fails too.
    const live = await createAccount({ name: "live" });
    await expectCode(
      t.platform.authenticate({
        bearer: `${live.token.slice(0, -1)}${live.token.endsWith("0") ? "1" : "0"}`,
      }),
      "unauthenticated",
    );
  });

  it("carries the account's expiry in the token", async () => {
    const seconds = Math.floor(t.clock.now().getTime() / 1000) + 3600;
    const res = await createAccount({ name: "dated", expiresAt: { seconds: BigInt(seconds), nanos: 0 } });
    expect(new Date(claimsOf(res.token).exp!).getTime()).toBe(seconds * 1000);
  });

  it("still accepts a legacy wapsa_ token stored as before, until its account is deleted", async () => {
    const { id, token } = await insertLegacyAccount();
    expect((await t.platform.authenticate({ bearer: token })).caller).toMatchObject({
      kind: "service_account",
      serviceAccountId: id,
      workspaceId: ada.workspaceId,
    });
    await t.call(ada.caller, ServiceAccountService.method.deleteServiceAccount, {
      workspaceId: ada.workspaceId,
      id,
    });
    await expectCode(t.platform.authenticate({ bearer: token }), "unauthenticated");
  });

  it("lets in only the token it issued: a token signed by its own key but never issued is refused", async () => {
    const live = await createAccount({ name: "live" });
    const key = await loadSigningKey(
      { storage: t.storage, keyStore, clock: t.clock },
      "service-account-token-signing-key",
    );
    const { jti: _, ...claims } = claimsOf(live.token);
    const sign = (profile: typeof serviceAccountTokenProfile, jti: string) =>
      createSignedTokenSigner(key, profile).sign({ ...claims, jti }, { now: t.clock.now(), expiresAt: null });
    // Same claims, a new token id: authentic, but its hash is not the stored one.
    await expectCode(
      t.platform.authenticate({ bearer: await sign(serviceAccountTokenProfile, crypto.randomUUID()) }),
      "unauthenticated",
    );
    // The issued token's very claims, without the implicit assertion: not a service-account token.
    const { implicitAssertion: __, ...unbound } = serviceAccountTokenProfile;
    await expectCode(
      t.platform.authenticate({ bearer: await sign(unbound, claimsOf(live.token).jti!) }),
      "unauthenticated",
    );
    await t.platform.authenticate({ bearer: live.token });
  });

  it("refuses any change to a token's characters or to its decoded bytes", async () => {
    const { token } = await createAccount({ name: "mutated" });
    const [, , payload, footer] = token.split(".") as [string, string, string, string];
    const bytes = Buffer.from(payload, "base64url");
    const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
    const mutations = fc.oneof(
      // One character replaced by another, or removed.
      fc
        .tuple(fc.nat({ max: token.length - 1 }), printable)
        .map(([at, c]) => token.slice(0, at) + c + token.slice(at + 1)),
      fc.nat({ max: token.length - 1 }).map((at) => token.slice(0, at) + token.slice(at + 1)),
      // One byte of the claims or signature changed, the framing kept valid.
      fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 })).map(([at, xor]) => {
        const changed = Buffer.from(bytes);
        changed[at]! ^= xor;
        return `v4.public.${changed.toString("base64url")}.${footer}`;
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        mutations.filter((candidate) => candidate.trim() !== token),
        async (candidate) => {
          await expectCode(t.platform.authenticate({ bearer: candidate }), "unauthenticated");
        },
      ),
      { numRuns: 300 },
    );
    await t.platform.authenticate({ bearer: token });
  });

  it("validates names, roles, expiry, and keeps names unique", async () => {
    await expectCode(createAccount({ name: "-bad" }), "invalid_argument");
    await expectCode(createAccount({ roleName: "admin" }), "invalid_argument");
    await expectCode(createAccount({ expiresAt: { seconds: 1n, nanos: 0 } }), "invalid_argument");
    await createAccount({ name: "unique" });
    await expectCode(createAccount({ name: "unique" }), "already_exists");
  });

  it("lists with filters and paging; updates only what is sent", async () => {
    for (const name of ["a1", "a2", "b1"])
      await createAccount({ name, tags: name.startsWith("a") ? ["team-a"] : [] });
    const page = await t.call(ada.caller, ServiceAccountService.method.listServiceAccounts, {
      workspaceId: ada.workspaceId,
      tags: ["team-a"],
      limit: 1,
    });
    expect(page.total).toBe(2);
    expect(page.serviceAccounts).toHaveLength(1);
    const target = page.serviceAccounts[0]!;
    const { serviceAccount } = await t.call(ada.caller, ServiceAccountService.method.updateServiceAccount, {
      workspaceId: ada.workspaceId,
      id: target.id,
      description: "updated",
    });
    expect(serviceAccount).toMatchObject({ name: target.name, description: "updated", tags: ["team-a"] });
  });
});

function createAccountAs(caller: Parameters<TestPlatform["call"]>[0]) {
  return t.call(caller, ServiceAccountService.method.createServiceAccount, {
    workspaceId: ada.workspaceId,
    name: "sneaky",
  });
}

/** The claims of a PASETO v4.public token (read, not verified). */
function claimsOf(token: string): Record<string, string | undefined> {
  const bytes = Buffer.from(token.split(".")[2]!, "base64url");
  return JSON.parse(bytes.subarray(0, -64).toString()) as Record<string, string | undefined>;
}

/** An account with a `wapsa_<id>_<secret>` token, stored as such tokens were: SHA-256 of the secret. */
async function insertLegacyAccount(): Promise<{ id: string; token: string }> {
  const id = crypto.randomUUID();
  const secret = randomBytes(32).toString("hex");
  const now = t.clock.now();
  await t.storage.serviceAccounts.insert({
    id,
    workspaceId: ada.workspaceId,
    name: "legacy",
    description: "",
    role: "viewer",
    tags: [],
    tokenHash: createHash("sha256").update(secret).digest("hex"),
    expiresAt: null,
    lastUsedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  return { id, token: `wapsa_${id}_${secret}` };
}
