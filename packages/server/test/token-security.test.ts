/**
 * Every credential the server accepts, attacked through the real server: tampered (a character
 * changed in what is signed, or in the signature), expired, signed by another key of the right
 * type, revoked (sign-out, deletion, rotation, a newer one), and replayed where it is single-use.
 * Each attack must be refused with the code the contract documents for that credential
 * (`unauthenticated` for credentials and sign-in secrets, `invalid_argument` for the email and
 * CLI-login links, `not_found` for invitation links), and must change nothing: the database is
 * read before and after, table by table (the sign-in throttle's counters aside, which count the
 * failure on purpose, and the server's own instance lease).
 *
 * One table: each kind of credential with the proof that it works when genuine, then its attacks.
 * Time is the server's manual clock, moved forward for the expiry cases.
 *
 * Covered by their own suites and not repeated here:
 * - passkey assertions (replayed, expired, unknown, impersonating, forged):
 *   packages/core/test/passkeys.test.ts;
 * - SAML assertions (tampered, unsigned, another key, expired, replayed) and OIDC state
 *   (once, same browser, expiry; PKCE and nonce): packages/core/test/sso-saml.test.ts,
 *   sso-oidc.test.ts and packages/server/test/sso-http.test.ts;
 * - licence files (any change, unknown key, expired, issued in the future):
 *   packages/core/test/license.test.ts.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from "node:crypto";
import { createRequire } from "node:module";
import { join } from "node:path";
import { AuthorityType, AuthService, CertificateKeyType, CertificateService } from "@wap/api";
import { createManualClock, defaultTokenLifetimes } from "@wap/core/internal";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import {
  type CallOptions,
  connectCall,
  type JsonResponse,
  restCall,
  signUp,
  signUpWithWorkspace,
} from "@wap/test-kit/http";
import { createMemoryMailer } from "@wap/test-kit/mail";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pasetoClaims, rewrittenClaims, signedByAnotherKey } from "./support/paseto.js";

const clock = createManualClock(new Date());
const mail = createMemoryMailer();
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    platformOptions: { clock, mailer: mail.mailer, config: { publicBaseUrl: "https://wap.example" } },
  });
});
afterAll(() => server?.close());

/** The lifetimes and windows the server runs with. */
const config = () => server.platform.services.config;
const { enrollExpirySeconds, inviteExpirySeconds } = defaultTokenLifetimes;

// ---------------------------------------------------------------------------------------------
// Calls and credentials

const call = (procedure: string, body: unknown, options?: CallOptions) =>
  connectCall(server.url, `platform.v1.${procedure}`, body, options);

/** A call that must succeed, as a step on the way to an attack. */
async function callOk(procedure: string, body: unknown, options?: CallOptions): Promise<JsonResponse> {
  const answer = await call(procedure, body, options);
  expect(answer.status).toBe(200);
  return answer;
}

const later = (seconds: number) => clock.advance(seconds * 1000);

/** A request signed with a `Platform` challenge (docs/agent-protocol.md) for `procedure`. */
function challenge(
  id: string,
  key: KeyObject,
  procedure: string,
  options: { at?: Date; nonce?: string } = {},
): string {
  const seconds = Math.floor((options.at ?? clock.now()).getTime() / 1000);
  const signed = `${id}:${seconds}:${options.nonce ?? randomBytes(12).toString("hex")}:/platform.v1.${procedure}`;
  return `Platform ${signed}:${sign("sha256", Buffer.from(signed), { key, dsaEncoding: "der" }).toString("base64url")}`;
}

const p256 = () => generateKeyPairSync("ec", { namedCurve: "P-256" });
const pem = (key: KeyObject) => key.export({ type: "spki", format: "pem" }).toString();

const hex = "0123456789abcdef";
const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const crockford = "0123456789abcdefghjkmnpqrstvwxyz";

/** `text` with the character at `index` (negative: from the end) replaced by the next one of `alphabet`. */
function flip(text: string, index: number, alphabet: string): string {
  const at = index < 0 ? text.length + index : index;
  const next = alphabet[(alphabet.indexOf(text[at]!) + 1) % alphabet.length]!;
  return text.slice(0, at) + next + text.slice(at + 1);
}

/** A PASETO v4.public token's parts: payload (message and 64-byte signature) and footer. */
function pasetoParts(token: string) {
  const [, , payload, footer] = token.split(".") as [string, string, string, string];
  const bytes = Buffer.from(payload, "base64url");
  return {
    payload,
    footer,
    claims: JSON.parse(bytes.subarray(0, bytes.length - 64).toString()) as {
      sub: string;
      sid: string;
      typ: string;
      iss: string;
      aud: string;
    },
    keyId: (JSON.parse(Buffer.from(footer, "base64url").toString()) as { kid: string }).kid,
  };
}

/** An access token with the claims of `genuine`, signed by another Ed25519 key. */
async function signedElsewhere(genuine: string, keyId?: string): Promise<string> {
  const { claims, keyId: ours } = pasetoParts(genuine);
  return signedByAnotherKey(
    { sub: claims.sub, sid: claims.sid, typ: claims.typ, iss: claims.iss, aud: claims.aud },
    { keyId: keyId ?? ours, now: clock.now(), expiresIn: 900 },
  );
}

/** The `token` parameter of the next mail to `to` whose link goes to `path`. */
async function linkToken(to: string, path: string): Promise<string> {
  for (;;) {
    const message = await Promise.race([
      mail.next(to),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no mail to ${to} for ${path}`)), 5000),
      ),
    ]);
    const link = new URL(/https?:\/\/\S+/.exec(message.text)![0]);
    if (link.pathname === path) return link.searchParams.get("token")!;
  }
}

/** A signed-in user who owns a workspace with a default SSH authority. */
async function ownerWithAuthority(name: string) {
  const owner = await signUpWithWorkspace(server.url, name);
  const cas = clientFor(CertificateService, transportFor("connect-json-h1", server.url));
  const { certificateAuthority } = await cas.createCertificateAuthority(
    {
      workspaceId: owner.workspaceId,
      name: "ssh",
      keyType: CertificateKeyType.ED25519,
      authorityType: AuthorityType.SSH,
    },
    bearer(owner.accessToken),
  );
  return { ...owner, caId: certificateAuthority!.id };
}

/** A CLI device of a new user, logged in through StreamCLILogin and VerifyCLILogin. */
async function cliDevice(name: string) {
  const user = await signUp(server.url, name);
  const login = await openCliLogin();
  await callOk(
    "AuthService/VerifyCLILogin",
    { loginCode: login.code, userCode: login.userCode },
    { token: user.accessToken },
  );
  expect((await login.next()).value?.user?.email).toBe(user.email);
  return { user, id: login.deviceId, key: login.key };
}

/** Opens StreamCLILogin as the CLI does and reads the code out of the verification URL. */
async function openCliLogin() {
  const deviceId = randomUUID();
  const { privateKey, publicKey } = p256();
  const controller = new AbortController();
  const auth = clientFor(AuthService, transportFor("connect-binary-h2", server.url));
  const stream = auth
    .streamCLILogin(
      { authMethod: "soft", authPubkey: pem(publicKey) },
      { headers: { "platform-client-device-id": deviceId }, signal: controller.signal },
    )
    [Symbol.asyncIterator]();
  const first = await stream.next();
  const code = new URL(first.value!.verificationUrl).searchParams.get("code")!;
  return {
    deviceId,
    key: privateKey,
    code,
    userCode: first.value!.userCode,
    next: () => stream.next(),
    /** Waits for the stream's end; resolves to the error it ended with, if any. */
    ended: () =>
      stream.next().then(
        () => undefined,
        (error: unknown) => error,
      ),
    /** Leaves, as a CLI interrupted by its user; resolves once the server has forgotten the login. */
    async abandon() {
      controller.abort();
      for (let tries = 0; tries < 100 && pendingCliLogins() > 0; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/** A daemon enrolled in a new workspace, and that workspace's owner. */
async function enrolledDaemon(name: string) {
  const owner = await ownerWithAuthority(name);
  const token = await enrollToken(owner);
  const { privateKey, publicKey } = p256();
  const enrolled = await enroll(token, pem(publicKey));
  expect(enrolled.status).toBe(200);
  return { owner, id: enrolled.body.id as string, key: privateKey };
}

async function enrollToken(owner: { workspaceId: string; accessToken: string }): Promise<string> {
  const minted = await call(
    "DaemonService/RefreshEnrollToken",
    { workspaceId: owner.workspaceId },
    { token: owner.accessToken },
  );
  return minted.body.token as string;
}

function enroll(token: string, authPubkey = pem(p256().publicKey)) {
  return call(
    "DaemonService/EnrollDaemon",
    { token, caId: "", authMethod: "soft", authPubkey },
    { headers: { "platform-daemon-hostname": "db-1" } },
  );
}

async function inviteToken(owner: { workspaceId: string; accessToken: string }): Promise<string> {
  const minted = await call(
    "InvitationService/RefreshInviteToken",
    { workspaceId: owner.workspaceId },
    { token: owner.accessToken },
  );
  return (minted.body.link as string).split("/invites/")[1]!;
}

async function serviceAccount(owner: { workspaceId: string; accessToken: string }, extra: object = {}) {
  const created = await callOk(
    "ServiceAccountService/CreateServiceAccount",
    {
      workspaceId: owner.workspaceId,
      name: `bot-${randomBytes(4).toString("hex")}`,
      roleName: "editor",
      ...extra,
    },
    { token: owner.accessToken },
  );
  return { id: created.body.serviceAccount.id as string, token: created.body.token as string };
}

/** A `wapsa_<id>_<secret>` editor account inserted as such tokens were stored: SHA-256 of the secret. */
async function legacyServiceAccount(workspaceId: string): Promise<string> {
  const id = randomUUID();
  const secret = randomBytes(32).toString("hex");
  const now = clock.now();
  await server.platform.services.storage.serviceAccounts.insert({
    id,
    workspaceId,
    name: `legacy-${randomBytes(4).toString("hex")}`,
    description: "",
    role: "editor",
    tags: [],
    tokenHash: createHash("sha256").update(secret).digest("hex"),
    expiresAt: null,
    lastUsedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  return `wapsa_${id}_${secret}`;
}

const legacyIdOf = (token: string) => token.split("_")[1]!;

/**
 * A service-account token with the claims of `genuine`, signed by another Ed25519 key, bound to
 * the deployment's service-account assertion like a genuine one (docs/security.md).
 */
async function serviceAccountSignedElsewhere(genuine: string, keyId?: string): Promise<string> {
  const { keyId: ours } = pasetoParts(genuine);
  const { jti, sub, wid, typ, iss, aud } = pasetoClaims(genuine);
  return signedByAnotherKey(
    { jti: jti!, sub: sub!, wid: wid!, typ: typ!, iss: iss!, aud: aud! },
    { keyId: keyId ?? ours, now: clock.now(), implicitAssertion: "wap service-account token" },
  );
}

async function backupCodes(user: { accessToken: string; email: string }): Promise<string[]> {
  // Credentials besides the password need a verified address: as if the mailed link was followed.
  const storage = server.platform.services.storage;
  const record = await storage.users.findByEmail(user.email);
  if (record && !record.emailVerified)
    await storage.users.update(record.id, { emailVerified: true }, new Date());
  const created = await call("CredentialService/CreateBackupCodes", {}, { token: user.accessToken });
  return created.body.codes as string[];
}

// The write each kind of caller attempts with its forged credential: refused, it leaves no trace.
const renameSelf = (options: CallOptions) =>
  call("UserService/UpdateProfile", { name: "Renamed By Attacker" }, options);
const createTeam = (workspaceId: string, options: CallOptions) =>
  call("TeamService/CreateTeam", { workspaceId, name: `team-${randomBytes(4).toString("hex")}` }, options);

// ---------------------------------------------------------------------------------------------
// The database, read from outside the server

type SqliteFile = {
  prepare(text: string): { all(): Record<string, unknown>[] };
  close(): void;
};
const BetterSqlite3 = createRequire(join(import.meta.dirname, "../../storage-sqlite/package.json"))(
  "better-sqlite3",
) as new (
  file: string,
  options: { readonly: boolean },
) => SqliteFile;

/**
 * Tables left out of the comparison: the sign-in throttle counts failures (on purpose), and the
 * server renews its own instance lease on a timer, whatever the requests.
 */
const notCompared = new Set(["login_throttles", "server_instances"]);

/** A digest of every table's rows. */
function snapshot(): Map<string, string> {
  const db = new BetterSqlite3(join(server.dataDir, "wap.db"), { readonly: true });
  try {
    const tables = db
      .prepare(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name",
      )
      .all()
      .map((row) => String(row.name))
      .filter((name) => !notCompared.has(name));
    return new Map(
      tables.map((table) => {
        // Security events (a failed sign-in, a denied call) are the one trace a refusal leaves, on
        // purpose: rate-limited, and checked in the core's audit tests.
        const where = table === "audit_events" ? " where action not like 'security.%'" : "";
        const rows = db.prepare(`select * from "${table}"${where} order by rowid`).all();
        return [table, createHash("sha256").update(JSON.stringify(rows)).digest("hex")];
      }),
    );
  } finally {
    db.close();
  }
}

function pendingCliLogins(): number {
  const db = new BetterSqlite3(join(server.dataDir, "wap.db"), { readonly: true });
  try {
    return Number(db.prepare("select count(*) as n from cli_logins").all()[0]!.n);
  } finally {
    db.close();
  }
}

function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...after.keys()].filter((table) => before.get(table) !== after.get(table)).sort();
}

// ---------------------------------------------------------------------------------------------
// The table

type RefusalCode = "unauthenticated" | "invalid_argument" | "not_found";

/** What an attack sends, once its scene is set. */
interface Attempt {
  send(): Promise<JsonResponse>;
  /** Tables the refusal may change by design, and why (a replayed refresh token ends its session). */
  readonly changes?: { readonly tables: readonly string[]; readonly why: string };
  /** Further checks once the refusal is in. */
  after?(answer: JsonResponse): Promise<void>;
  /** Undoes what the scene left open (a login stream). */
  cleanup?(): Promise<void>;
}

interface Attack {
  readonly attack: string;
  readonly code: RefusalCode;
  /** Sets the scene; resolves to the attempt. */
  prepare(): Promise<Attempt>;
}

interface CredentialKind {
  readonly kind: string;
  /** The genuine credential works: each refusal below is the attack's doing, not a broken scene. */
  genuine(): Promise<void>;
  readonly attacks: readonly Attack[];
}

const httpStatus: Record<RefusalCode, number> = {
  unauthenticated: 401,
  invalid_argument: 400,
  not_found: 404,
};

/** The access token's attacks, carried by `carry` (the Authorization header or the session cookie). */
function accessTokenAttacks(carry: (token: string) => CallOptions): Attack[] {
  const attempt = async (token: string, scene: Partial<Attempt> = {}): Promise<Attempt> => ({
    send: () => renameSelf(carry(token)),
    ...scene,
  });
  return [
    {
      attack: "tampered payload",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "tamper");
        const { payload } = pasetoParts(accessToken);
        return attempt(accessToken.replace(payload, flip(payload, 20, base64url)));
      },
    },
    {
      attack: "tampered signature",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "tamper");
        const { payload } = pasetoParts(accessToken);
        return attempt(accessToken.replace(payload, flip(payload, -10, base64url)));
      },
    },
    {
      attack: "tampered footer (key id)",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "tamper");
        const { footer } = pasetoParts(accessToken);
        return attempt(accessToken.replace(`.${footer}`, `.${flip(footer, 5, base64url)}`));
      },
    },
    {
      attack: "relabelled as another PASETO version and purpose (v4.local)",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "relabel");
        return attempt(accessToken.replace(/^v4\.public\./, "v4.local."));
      },
    },
    {
      attack: "a refresh token in its place",
      code: "unauthenticated",
      async prepare() {
        return attempt((await signUp(server.url, "confused")).refreshToken);
      },
    },
    {
      attack: "expired",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "expiry");
        later(config().accessTokenTtlSeconds);
        return attempt(accessToken);
      },
    },
    {
      attack: "signed by another Ed25519 key under our key id",
      code: "unauthenticated",
      async prepare() {
        return attempt(await signedElsewhere((await signUp(server.url, "forged")).accessToken));
      },
    },
    {
      attack: "signed by another Ed25519 key under its own key id",
      code: "unauthenticated",
      async prepare() {
        return attempt(
          await signedElsewhere((await signUp(server.url, "forged")).accessToken, "attacker-key"),
        );
      },
    },
    {
      attack: "revoked by Logout",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "logout");
        await callOk("AuthService/Logout", {}, { token: accessToken });
        return attempt(accessToken);
      },
    },
    {
      attack: "revoked by signing the session out (DeleteUserDevice)",
      code: "unauthenticated",
      async prepare() {
        const user = await signUp(server.url, "signedout");
        const other = await call("AuthService/Login", { email: user.email, password: user.password });
        const { sid } = pasetoParts(user.accessToken).claims;
        await callOk("UserService/DeleteUserDevice", { id: sid }, { token: other.body.accessToken });
        return attempt(user.accessToken);
      },
    },
    {
      attack: "revoked by a password change in another session",
      code: "unauthenticated",
      async prepare() {
        const user = await signUp(server.url, "rotated");
        const other = await call("AuthService/Login", { email: user.email, password: user.password });
        await callOk(
          "CredentialService/UpdatePassword",
          { currentPassword: user.password, newPassword: "another long passphrase" },
          { token: other.body.accessToken },
        );
        return attempt(user.accessToken);
      },
    },
    {
      attack: "revoked by deleting the account",
      code: "unauthenticated",
      async prepare() {
        const { accessToken } = await signUp(server.url, "deleted");
        await callOk("UserService/DeleteAccount", {}, { token: accessToken });
        return attempt(accessToken);
      },
    },
  ];
}

const kinds: CredentialKind[] = [
  {
    kind: "access token (Authorization: Bearer)",
    async genuine() {
      const { accessToken } = await signUp(server.url, "genuine");
      expect((await renameSelf({ token: accessToken })).status).toBe(200);
    },
    attacks: accessTokenAttacks((token) => ({ token })),
  },
  {
    kind: "access token (session cookie)",
    async genuine() {
      const { accessToken } = await signUp(server.url, "genuine");
      expect((await renameSelf({ cookie: `session=${accessToken}` })).status).toBe(200);
    },
    attacks: accessTokenAttacks((token) => ({ cookie: `session=${token}` })).map((attack) => ({
      ...attack,
      async prepare() {
        const attempt = await attack.prepare();
        return {
          ...attempt,
          // The browser is told to drop the cookie it keeps sending.
          async after(answer) {
            expect(answer.headers.get("set-cookie")).toMatch(/^session=;.*Max-Age=0/i);
          },
        };
      },
    })),
  },
  {
    kind: "refresh token",
    async genuine() {
      const { refreshToken } = await signUp(server.url, "genuine");
      await callOk("AuthService/RefreshToken", { refreshToken });
    },
    attacks: [
      {
        attack: "tampered",
        code: "unauthenticated",
        async prepare() {
          const { refreshToken } = await signUp(server.url, "tamper");
          return {
            send: () => call("AuthService/RefreshToken", { refreshToken: flip(refreshToken, -5, hex) }),
            // The attempt did not end the session: the genuine token still rotates.
            async after() {
              await callOk("AuthService/RefreshToken", { refreshToken });
            },
          };
        },
      },
      {
        attack: "made up (well-formed, never issued)",
        code: "unauthenticated",
        async prepare() {
          return {
            send: () =>
              call("AuthService/RefreshToken", { refreshToken: `wapr_${randomBytes(32).toString("hex")}` }),
          };
        },
      },
      {
        attack: "an access token in its place",
        code: "unauthenticated",
        async prepare() {
          const { accessToken } = await signUp(server.url, "confused");
          return { send: () => call("AuthService/RefreshToken", { refreshToken: accessToken }) };
        },
      },
      {
        attack: "expired",
        code: "unauthenticated",
        async prepare() {
          const { refreshToken } = await signUp(server.url, "expiry");
          later(config().refreshTokenTtlSeconds);
          return { send: () => call("AuthService/RefreshToken", { refreshToken }) };
        },
      },
      {
        attack: "revoked by Logout",
        code: "unauthenticated",
        async prepare() {
          const { accessToken, refreshToken } = await signUp(server.url, "logout");
          await call("AuthService/Logout", {}, { token: accessToken });
          return { send: () => call("AuthService/RefreshToken", { refreshToken }) };
        },
      },
      {
        attack: "replayed after rotation",
        code: "unauthenticated",
        async prepare() {
          const { refreshToken } = await signUp(server.url, "replay");
          const rotated = await callOk("AuthService/RefreshToken", { refreshToken });
          return {
            send: () => call("AuthService/RefreshToken", { refreshToken }),
            changes: { tables: ["auth_sessions"], why: "a spent token coming back ends its whole session" },
            // Whoever holds the rotated tokens (the thief or the owner) is out too.
            async after() {
              expect((await renameSelf({ token: rotated.body.accessToken })).status).toBe(401);
              expect(
                (await call("AuthService/RefreshToken", { refreshToken: rotated.body.refreshToken })).status,
              ).toBe(401);
            },
          };
        },
      },
    ],
  },
  {
    kind: "service-account token",
    async genuine() {
      const owner = await signUpWithWorkspace(server.url, "genuine");
      const { token } = await serviceAccount(owner);
      expect(token).toMatch(/^v4\.public\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect((await createTeam(owner.workspaceId, { token })).status).toBe(200);
      const rest = await restCall(
        server.url,
        "POST",
        `/v1/workspaces/${owner.workspaceId}/teams`,
        { name: `team-${randomBytes(4).toString("hex")}` },
        { token },
      );
      expect(rest.status).toBe(200);
      // A token from before service-account tokens were PASETOs, stored as it was then.
      const legacy = await legacyServiceAccount(owner.workspaceId);
      expect((await createTeam(owner.workspaceId, { token: legacy })).status).toBe(200);
    },
    attacks: [
      {
        attack: "a claim changed",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "tamper");
          const { token } = await serviceAccount(owner);
          const inClaims = "v4.public.".length + 20;
          return { send: () => createTeam(owner.workspaceId, { token: flip(token, inClaims, base64url) }) };
        },
      },
      {
        attack: "its payload rewritten to name another account of the workspace",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "swap");
          const [mine, other] = [await serviceAccount(owner), await serviceAccount(owner)];
          const forged = rewrittenClaims(mine.token, { sub: other.id });
          return { send: () => createTeam(owner.workspaceId, { token: forged }) };
        },
      },
      {
        attack: "its payload rewritten to name another workspace",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "rewid");
          const stranger = await signUpWithWorkspace(server.url, "rewid-b");
          const { token } = await serviceAccount(owner);
          const forged = rewrittenClaims(token, { wid: stranger.workspaceId });
          return { send: () => createTeam(stranger.workspaceId, { token: forged }) };
        },
      },
      {
        attack: "used on another workspace",
        code: "not_found",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "tenant-a");
          const stranger = await signUpWithWorkspace(server.url, "tenant-b");
          const { token } = await serviceAccount(owner);
          return {
            send: () => createTeam(stranger.workspaceId, { token }),
            // The token itself is genuine: authentication records its use before access is refused.
            changes: { tables: ["service_accounts"], why: "the account's lastUsedAt" },
          };
        },
      },
      {
        attack: "signed by another key under the service-account key's id",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "elsewhere");
          const { token } = await serviceAccount(owner);
          const forged = await serviceAccountSignedElsewhere(token);
          return { send: () => createTeam(owner.workspaceId, { token: forged }) };
        },
      },
      {
        attack: "signed by the access-token key",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "accesskey");
          const { token } = await serviceAccount(owner);
          const forged = await serviceAccountSignedElsewhere(token, pasetoParts(owner.accessToken).keyId);
          return { send: () => createTeam(owner.workspaceId, { token: forged }) };
        },
      },
      {
        attack: "made up legacy token (well-formed, never issued)",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "madeup");
          const { id } = await serviceAccount(owner);
          return {
            send: () =>
              createTeam(owner.workspaceId, { token: `wapsa_${id}_${randomBytes(32).toString("hex")}` }),
          };
        },
      },
      {
        attack: "expired",
        code: "unauthenticated",
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "expiry");
          const expiresAt = new Date(clock.now().getTime() + 3600_000).toISOString();
          const { token } = await serviceAccount(owner, { expiresAt });
          later(3600);
          return { send: () => createTeam(owner.workspaceId, { token }) };
        },
      },
      ...(["PASETO", "legacy"] as const).map((format) => ({
        attack: `revoked by deleting the account (${format} token)`,
        code: "unauthenticated" as const,
        async prepare() {
          const owner = await signUpWithWorkspace(server.url, "deleted");
          const issued = await serviceAccount(owner);
          const token = format === "PASETO" ? issued.token : await legacyServiceAccount(owner.workspaceId);
          const id = format === "PASETO" ? issued.id : legacyIdOf(token);
          await callOk(
            "ServiceAccountService/DeleteServiceAccount",
            { workspaceId: owner.workspaceId, id },
            { token: owner.accessToken },
          );
          return { send: () => createTeam(owner.workspaceId, { token }) };
        },
      })),
    ],
  },
  {
    kind: "CLI device challenge (Authorization: Platform)",
    async genuine() {
      const device = await cliDevice("genuine");
      const header = challenge(device.id, device.key, "UserService/UpdateProfile");
      expect((await renameSelf({ headers: { authorization: header } })).status).toBe(200);
    },
    attacks: signedRequestAttacks({
      setUp: async () => {
        const device = await cliDevice("device");
        return {
          ...device,
          procedure: "UserService/UpdateProfile",
          otherProcedure: "UserService/ListUserDevices",
          otherBody: {},
          send: (authorization: string) => renameSelf({ headers: { authorization } }),
        };
      },
      revocations: [
        {
          attack: "revoked by DeleteUserDevice",
          async revoke(device) {
            await callOk(
              "UserService/DeleteUserDevice",
              { id: device.id },
              { token: device.user.accessToken },
            );
          },
        },
        {
          attack: "revoked by the device's own Logout",
          async revoke(device) {
            const header = challenge(device.id, device.key, "AuthService/Logout");
            expect(
              (await call("AuthService/Logout", {}, { headers: { authorization: header } })).status,
            ).toBe(200);
          },
        },
        {
          attack: "revoked by a password change elsewhere",
          async revoke(device) {
            await callOk(
              "CredentialService/UpdatePassword",
              { currentPassword: device.user.password, newPassword: "another long passphrase" },
              { token: device.user.accessToken },
            );
          },
        },
      ],
    }),
  },
  {
    kind: "daemon challenge (Authorization: Platform)",
    async genuine() {
      const daemon = await enrolledDaemon("genuine");
      const header = challenge(daemon.id, daemon.key, "CertificateService/GetCertificateAuthority");
      await callOk(
        "CertificateService/GetCertificateAuthority",
        { workspaceId: daemon.owner.workspaceId, id: daemon.owner.caId },
        { headers: { authorization: header } },
      );
    },
    attacks: signedRequestAttacks({
      setUp: async () => {
        const daemon = await enrolledDaemon("daemon");
        return {
          ...daemon,
          procedure: "CertificateService/GetCertificateAuthority",
          otherProcedure: "CertificateService/ListCertificateAuthorities",
          otherBody: { workspaceId: daemon.owner.workspaceId },
          send: (authorization: string) =>
            call(
              "CertificateService/GetCertificateAuthority",
              { workspaceId: daemon.owner.workspaceId, id: daemon.owner.caId },
              { headers: { authorization } },
            ),
        };
      },
      revocations: [
        {
          attack: "revoked by deleting the daemon",
          async revoke(daemon) {
            await callOk(
              "DaemonService/DeleteDaemon",
              { workspaceId: daemon.owner.workspaceId, id: daemon.id },
              { token: daemon.owner.accessToken },
            );
          },
        },
      ],
    }),
  },
  {
    // Not single-use by design: one token enrols any number of machines until it expires.
    kind: "daemon enrolment token",
    async genuine() {
      const owner = await ownerWithAuthority("genuine");
      expect((await enroll(await enrollToken(owner))).status).toBe(200);
    },
    attacks: [
      {
        attack: "tampered",
        code: "unauthenticated",
        async prepare() {
          const token = await enrollToken(await ownerWithAuthority("tamper"));
          return { send: () => enroll(flip(token, 20, base64url)) };
        },
      },
      {
        attack: "expired",
        code: "unauthenticated",
        async prepare() {
          const token = await enrollToken(await ownerWithAuthority("expiry"));
          later(enrollExpirySeconds);
          return { send: () => enroll(token) };
        },
      },
      {
        attack: "revoked by RevokeEnrollToken",
        code: "unauthenticated",
        async prepare() {
          const owner = await ownerWithAuthority("revoked");
          const token = await enrollToken(owner);
          await call(
            "DaemonService/RevokeEnrollToken",
            { workspaceId: owner.workspaceId },
            { token: owner.accessToken },
          );
          return { send: () => enroll(token) };
        },
      },
      {
        attack: "rotated out by a newer token",
        code: "unauthenticated",
        async prepare() {
          const owner = await ownerWithAuthority("rotated");
          const token = await enrollToken(owner);
          await enrollToken(owner);
          return { send: () => enroll(token) };
        },
      },
      {
        attack: "the workspace's invitation token in its place",
        code: "unauthenticated",
        async prepare() {
          const owner = await ownerWithAuthority("confused");
          await enrollToken(owner);
          const token = await inviteToken(owner);
          return { send: () => enroll(token) };
        },
      },
    ],
  },
  {
    // A shared link, not single-use by design: it admits everyone who has it until it expires.
    kind: "invitation token",
    async genuine() {
      const owner = await signUpWithWorkspace(server.url, "genuine");
      const invitee = await signUp(server.url, "invitee");
      const accepted = await call(
        "InvitationService/AcceptInvitation",
        { token: await inviteToken(owner) },
        { token: invitee.accessToken },
      );
      expect(accepted.body).toEqual({ workspaceId: owner.workspaceId });
    },
    attacks: invitationAttacks(),
  },
  {
    kind: "email verification token",
    async genuine() {
      const user = await signUp(server.url, "genuine");
      const token = await linkToken(user.email, "/verify-email");
      await callOk("AuthService/VerifyEmail", { token });
    },
    attacks: [
      {
        attack: "tampered",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "tamper");
          const token = await linkToken(user.email, "/verify-email");
          return { send: () => call("AuthService/VerifyEmail", { token: flip(token, 10, base64url) }) };
        },
      },
      {
        attack: "expired",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "expiry");
          const token = await linkToken(user.email, "/verify-email");
          later(config().emailVerificationTtlSeconds);
          return { send: () => call("AuthService/VerifyEmail", { token }) };
        },
      },
      {
        attack: "replayed (already used)",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "replay");
          const token = await linkToken(user.email, "/verify-email");
          await callOk("AuthService/VerifyEmail", { token });
          return { send: () => call("AuthService/VerifyEmail", { token }) };
        },
      },
      {
        attack: "a password reset token in its place",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "confused");
          await call("AuthService/ForgotPassword", { email: user.email });
          const token = await linkToken(user.email, "/reset-password");
          // Refused without spending it: the reset link still works afterwards.
          return {
            send: () => call("AuthService/VerifyEmail", { token }),
            async after() {
              expect((await resetPassword(token)).status).toBe(200);
            },
          };
        },
      },
      {
        attack: "revoked by a newer link (ResendVerification)",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "resent");
          const token = await linkToken(user.email, "/verify-email");
          later(config().mailIntervalSeconds);
          await call("AuthService/ResendVerification", { email: user.email });
          await linkToken(user.email, "/verify-email");
          return { send: () => call("AuthService/VerifyEmail", { token }) };
        },
      },
    ],
  },
  {
    kind: "password reset token",
    async genuine() {
      const user = await signUp(server.url, "genuine");
      await call("AuthService/ForgotPassword", { email: user.email });
      const token = await linkToken(user.email, "/reset-password");
      expect(
        (await call("AuthService/ResetPassword", { token, newPassword: "a brand new passphrase" })).status,
      ).toBe(200);
    },
    attacks: [
      {
        attack: "tampered",
        code: "invalid_argument",
        async prepare() {
          const token = await resetToken("tamper");
          return { send: () => resetPassword(flip(token, 10, base64url)) };
        },
      },
      {
        attack: "expired",
        code: "invalid_argument",
        async prepare() {
          const token = await resetToken("expiry");
          later(config().passwordResetTtlSeconds);
          return { send: () => resetPassword(token) };
        },
      },
      {
        attack: "replayed (already used)",
        code: "invalid_argument",
        async prepare() {
          const token = await resetToken("replay");
          expect((await resetPassword(token)).status).toBe(200);
          return { send: () => resetPassword(token) };
        },
      },
      {
        attack: "an email verification token in its place",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "confused");
          const token = await linkToken(user.email, "/verify-email");
          return {
            send: () => resetPassword(token),
            async after() {
              await callOk("AuthService/VerifyEmail", { token });
            },
          };
        },
      },
      {
        attack: "revoked by a newer link (ForgotPassword again)",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "again");
          await call("AuthService/ForgotPassword", { email: user.email });
          const token = await linkToken(user.email, "/reset-password");
          later(config().mailIntervalSeconds);
          await call("AuthService/ForgotPassword", { email: user.email });
          await linkToken(user.email, "/reset-password");
          return { send: () => resetPassword(token) };
        },
      },
      {
        attack: "revoked by the account moving to another address since it was mailed",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "moved");
          await call("AuthService/ForgotPassword", { email: user.email });
          const token = await linkToken(user.email, "/reset-password");
          const address = `moved-${randomBytes(4).toString("hex")}@example.com`;
          await call("UserService/UpdateProfile", { email: address }, { token: user.accessToken });
          await callOk("AuthService/VerifyEmail", {
            token: await linkToken(address, "/verify-email"),
          });
          return {
            send: () => resetPassword(token),
            changes: { tables: ["one_time_tokens"], why: "the link, dead since the move, is spent" },
          };
        },
      },
    ],
  },
  {
    // Backup codes do not expire; each signs in once.
    kind: "backup code",
    async genuine() {
      const user = await signUp(server.url, "genuine");
      const [code] = await backupCodes(user);
      await callOk("AuthService/LoginWithBackupCode", { email: user.email, code });
    },
    attacks: [
      {
        attack: "tampered (one character)",
        code: "unauthenticated",
        async prepare() {
          const user = await signUp(server.url, "tamper");
          const [code] = await backupCodes(user);
          return {
            send: () =>
              call("AuthService/LoginWithBackupCode", { email: user.email, code: flip(code!, 0, crockford) }),
          };
        },
      },
      {
        attack: "replayed (already used)",
        code: "unauthenticated",
        async prepare() {
          const user = await signUp(server.url, "replay");
          const [code] = await backupCodes(user);
          expect((await call("AuthService/LoginWithBackupCode", { email: user.email, code })).status).toBe(
            200,
          );
          return { send: () => call("AuthService/LoginWithBackupCode", { email: user.email, code }) };
        },
      },
      {
        attack: "another account's code",
        code: "unauthenticated",
        async prepare() {
          const [user, other] = [await signUp(server.url, "victim"), await signUp(server.url, "other")];
          await backupCodes(user);
          const [code] = await backupCodes(other);
          return { send: () => call("AuthService/LoginWithBackupCode", { email: user.email, code }) };
        },
      },
      {
        attack: "revoked by DeleteBackupCodes",
        code: "unauthenticated",
        async prepare() {
          const user = await signUp(server.url, "deleted");
          const [code] = await backupCodes(user);
          await call("CredentialService/DeleteBackupCodes", {}, { token: user.accessToken });
          return { send: () => call("AuthService/LoginWithBackupCode", { email: user.email, code }) };
        },
      },
      {
        attack: "revoked by a new set",
        code: "unauthenticated",
        async prepare() {
          const user = await signUp(server.url, "renewed");
          const [code] = await backupCodes(user);
          await backupCodes(user);
          return { send: () => call("AuthService/LoginWithBackupCode", { email: user.email, code }) };
        },
      },
    ],
  },
  {
    kind: "CLI login code",
    async genuine() {
      const user = await signUp(server.url, "genuine");
      const login = await openCliLogin();
      expect((await verifyCliLogin(login, user.accessToken)).status).toBe(200);
      expect((await login.next()).value?.user?.email).toBe(user.email);
    },
    attacks: [
      {
        attack: "tampered",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "tamper");
          const login = await openCliLogin();
          return {
            send: () => verifyCliLogin(login, user.accessToken, flip(login.code, 7, hex)),
            cleanup: login.abandon,
          };
        },
      },
      {
        attack: "expired",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "expiry");
          const login = await openCliLogin();
          later(config().cliLoginTtlSeconds);
          return {
            send: () => verifyCliLogin(login, user.accessToken),
            changes: { tables: ["cli_logins"], why: "the login's own stream removes it once it has expired" },
            async after() {
              // The CLI hears that its login expired; no device was bound.
              expect(String(await login.ended())).toContain("not approved in time");
            },
            cleanup: login.abandon,
          };
        },
      },
      {
        attack: "replayed (already approved)",
        code: "invalid_argument",
        async prepare() {
          const user = await signUp(server.url, "replay");
          const login = await openCliLogin();
          expect((await verifyCliLogin(login, user.accessToken)).status).toBe(200);
          await login.next();
          const attacker = await signUp(server.url, "attacker");
          return { send: () => verifyCliLogin(login, attacker.accessToken) };
        },
      },
    ],
  },
];

/** A CLI device or a daemon, set up to sign `Platform` challenges. */
type Signer<S> = S & {
  readonly id: string;
  readonly key: KeyObject;
  /** The procedure its attempts call, and another it may call with `otherBody`. */
  readonly procedure: string;
  readonly otherProcedure: string;
  readonly otherBody: object;
  send(authorization: string): Promise<JsonResponse>;
};

/** The attacks on a `Platform` challenge, shared by CLI devices and daemons. */
function signedRequestAttacks<S>(options: {
  setUp(): Promise<Signer<S>>;
  revocations: ReadonlyArray<{ attack: string; revoke(signer: Signer<S>): Promise<void> }>;
}): Attack[] {
  const signedBy = (build: (s: Signer<S>) => string) => ({
    code: "unauthenticated" as const,
    async prepare(): Promise<Attempt> {
      const signer = await options.setUp();
      const header = build(signer);
      return { send: () => signer.send(header) };
    },
  });
  return [
    {
      attack: "tampered signed field (nonce)",
      ...signedBy((s) => {
        const header = challenge(s.id, s.key, s.procedure);
        const nonce = header.split(":")[2]!;
        return header.replace(`:${nonce}:`, `:${flip(nonce, 0, hex)}:`);
      }),
    },
    {
      attack: "tampered signature",
      ...signedBy((s) => flip(challenge(s.id, s.key, s.procedure), -3, base64url)),
    },
    {
      attack: "expired (signed more than the window ago)",
      ...signedBy((s) =>
        challenge(s.id, s.key, s.procedure, {
          at: new Date(clock.now().getTime() - (config().challengeWindowSeconds + 1) * 1000),
        }),
      ),
    },
    {
      attack: "dated beyond the window ahead",
      ...signedBy((s) =>
        challenge(s.id, s.key, s.procedure, {
          at: new Date(clock.now().getTime() + (config().challengeWindowSeconds + 1) * 1000),
        }),
      ),
    },
    {
      attack: "signed by another P-256 key",
      ...signedBy((s) => challenge(s.id, p256().privateKey, s.procedure)),
    },
    {
      attack: "signed for another procedure",
      ...signedBy((s) => challenge(s.id, s.key, s.otherProcedure)),
    },
    {
      attack: "replayed",
      code: "unauthenticated",
      async prepare() {
        const signer = await options.setUp();
        const header = challenge(signer.id, signer.key, signer.procedure);
        expect((await signer.send(header)).status).toBe(200);
        return { send: () => signer.send(header) };
      },
    },
    {
      attack: "nonce reused in a fresh signature for another procedure",
      code: "unauthenticated",
      async prepare() {
        const signer = await options.setUp();
        const nonce = randomBytes(12).toString("hex");
        expect(
          (await signer.send(challenge(signer.id, signer.key, signer.procedure, { nonce }))).status,
        ).toBe(200);
        const reused = challenge(signer.id, signer.key, signer.otherProcedure, { nonce });
        // Sent to the procedure it names, so that only the nonce is wrong.
        return {
          send: () => call(signer.otherProcedure, signer.otherBody, { headers: { authorization: reused } }),
        };
      },
    },
    ...options.revocations.map(({ attack, revoke }) => ({
      attack,
      code: "unauthenticated" as const,
      async prepare(): Promise<Attempt> {
        const signer = await options.setUp();
        await revoke(signer);
        return { send: () => signer.send(challenge(signer.id, signer.key, signer.procedure)) };
      },
    })),
  ];
}

function invitationAttacks(): Attack[] {
  const accept = async (token: string) => {
    const invitee = await signUp(server.url, "invitee");
    return {
      send: () => call("InvitationService/AcceptInvitation", { token }, { token: invitee.accessToken }),
    };
  };
  return [
    {
      attack: "tampered",
      code: "not_found",
      async prepare() {
        return accept(
          flip(await inviteToken(await signUpWithWorkspace(server.url, "tamper")), 20, base64url),
        );
      },
    },
    {
      attack: "tampered, looked up without signing in (GetInvitation)",
      code: "not_found",
      async prepare() {
        const token = flip(await inviteToken(await signUpWithWorkspace(server.url, "peek")), 20, base64url);
        return { send: () => call("InvitationService/GetInvitation", { token }) };
      },
    },
    {
      attack: "expired",
      code: "not_found",
      async prepare() {
        const token = await inviteToken(await signUpWithWorkspace(server.url, "expiry"));
        later(inviteExpirySeconds);
        return accept(token);
      },
    },
    {
      attack: "revoked by RevokeInviteToken",
      code: "not_found",
      async prepare() {
        const owner = await signUpWithWorkspace(server.url, "revoked");
        const token = await inviteToken(owner);
        await call(
          "InvitationService/RevokeInviteToken",
          { workspaceId: owner.workspaceId },
          { token: owner.accessToken },
        );
        return accept(token);
      },
    },
    {
      attack: "rotated out by a newer link",
      code: "not_found",
      async prepare() {
        const owner = await signUpWithWorkspace(server.url, "rotated");
        const token = await inviteToken(owner);
        await inviteToken(owner);
        return accept(token);
      },
    },
    {
      attack: "the workspace's enrolment token in its place",
      code: "not_found",
      async prepare() {
        const owner = await signUpWithWorkspace(server.url, "confused");
        await inviteToken(owner);
        return accept(await enrollToken(owner));
      },
    },
  ];
}

async function resetToken(name: string): Promise<string> {
  const user = await signUp(server.url, name);
  await call("AuthService/ForgotPassword", { email: user.email });
  return linkToken(user.email, "/reset-password");
}

const resetPassword = (token: string) =>
  call("AuthService/ResetPassword", { token, newPassword: "an attacker's passphrase" });

const verifyCliLogin = (
  login: { code: string; userCode: string },
  accessToken: string,
  loginCode = login.code,
) => call("AuthService/VerifyCLILogin", { loginCode, userCode: login.userCode }, { token: accessToken });

// ---------------------------------------------------------------------------------------------

for (const { kind, genuine, attacks } of kinds) {
  describe(kind, () => {
    it(`${kind}: the genuine credential is accepted`, genuine);

    for (const { attack, code, prepare } of attacks) {
      it(`${kind}: ${attack} is refused with ${code} and changes nothing`, async () => {
        const attempt = await prepare();
        try {
          const before = snapshot();
          const answer = await attempt.send();
          expect({ status: answer.status, code: answer.body?.code }).toEqual({
            status: httpStatus[code],
            code,
          });
          const allowed = new Set(attempt.changes?.tables);
          const changed = changedTables(before, snapshot()).filter((table) => !allowed.has(table));
          const besides = attempt.changes ? ` (besides ${attempt.changes.why})` : "";
          expect(changed, `tables a refused attempt wrote to${besides}`).toEqual([]);
          await attempt.after?.(answer);
        } finally {
          await attempt.cleanup?.();
        }
      });
    }
  });
}
