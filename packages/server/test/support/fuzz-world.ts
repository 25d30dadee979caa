/**
 * The world the RPC fuzzer runs in, built through the running server as clients would build it:
 * workspace A with a user of every role, a session cookie, service accounts (viewer and editor),
 * an enrolled daemon that signs `Platform` challenges, and one of every resource; workspace B
 * with one of every resource too, whose owner is used only here, to build it. Also credentials
 * that must not work: a logged-out session, a deleted user, garbage.
 *
 * Fuzzed requests may legitimately wreck A (delete it, demote its owner, sign everyone out):
 * {@link FuzzWorld.ensureHealthy} notices and builds a fresh A.
 */
import { execFileSync } from "node:child_process";
import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { AuthService } from "@wap/api";
import { anonymous, createCallContext, type Platform } from "@wap/core";
import { connectCall, type JsonResponse, restCall } from "@wap/test-kit/http";
import type { IdKind, ValuePools } from "./fuzz-values.js";
import { rewrittenClaims } from "./paseto.js";
import { sshEd25519PublicKey } from "./ssh-keys.js";

/** Who a fuzzed request is sent as. None of them may act in workspace B. */
export const callerNames = [
  "owner",
  "admin",
  "editor",
  "viewer",
  "owner-cookie",
  "sa-viewer",
  "sa-editor",
  "daemon",
  "anonymous",
  "logged-out",
  "deleted-user",
  "garbage",
] as const;
export type CallerName = (typeof callerNames)[number];

type Role = "owner" | "admin" | "editor" | "viewer";
const memberRoles = ["admin", "editor", "viewer"] as const;
const password = "correct horse battery staple";

interface User {
  readonly id: string;
  readonly email: string;
  readonly token: string;
}

/** A P-256 key that signs `Platform` challenges (docs/agent-protocol.md). */
interface SigningKey {
  readonly privateKey: KeyObject;
  readonly pem: string;
}

/** One workspace and what was made in it. */
export interface WorkspaceFixture {
  readonly workspaceId: string;
  readonly users: Readonly<Record<Role, User>>;
  readonly serviceAccounts: Readonly<Record<"viewer" | "editor", { id: string; token: string }>>;
  readonly daemon: { readonly id: string; readonly key: SigningKey };
  readonly domain: string;
  /** Every identifier, by kind: the workspace, its users, authorities, team, targets... */
  readonly ids: Readonly<Record<IdKind, readonly string[]>>;
  /** The invite and enrolment tokens. */
  readonly secrets: readonly string[];
}

function signingKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, pem: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

/** `Platform <id>:<unix seconds>:<nonce>:<procedure>:<DER signature, base64url>`. */
export function platformChallenge(id: string, key: SigningKey, procedure: string): string {
  const signed = `${id}:${Math.floor(Date.now() / 1000)}:${randomBytes(12).toString("hex")}:${procedure}`;
  const signature = sign("sha256", Buffer.from(signed), { key: key.privateKey, dsaEncoding: "der" });
  return `Platform ${signed}:${signature.toString("base64url")}`;
}

/** A CSR made by openssl, when the machine has it (the TLS tests need it too). */
function certificateRequest(): string | undefined {
  const args = ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  try {
    return execFileSync("openssl", [...args, "-keyout", "/dev/null", "-subj", "/CN=fuzz.example.com"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return undefined;
  }
}

function ok(what: string, res: JsonResponse): JsonResponse {
  if (res.status !== 200) throw new Error(`${what} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

let users = 0;

/**
 * A new account: registered over HTTP, signed in through the platform itself. Fuzzed sign-ins
 * with wrong passwords throttle this client's address, and the fixtures must not wait for it.
 */
async function signUp(baseUrl: string, platform: Platform, name: string) {
  const email = `${name.toLowerCase()}-${process.pid}-${++users}@example.com`;
  ok(
    "register",
    await restCall(baseUrl, "POST", "/v1/register", {
      name: `${name} tester`,
      email,
      username: `${name.toLowerCase().slice(0, 20)}${users}`,
      password,
    }),
  );
  const login = await platform.invoke(
    AuthService.method.login,
    createCallContext(anonymous),
    create(AuthService.method.login.input, { email, password }),
  );
  return { email, accessToken: login.accessToken };
}

/** Builds one workspace over HTTP, as its owner. */
async function seedWorkspace(baseUrl: string, platform: Platform, label: string): Promise<WorkspaceFixture> {
  const newUser = async (name: string): Promise<User> => {
    const user = await signUp(baseUrl, platform, `${label}${name}`);
    const me = ok(
      "whoami",
      await restCall(baseUrl, "GET", "/v1/whoami", undefined, { token: user.accessToken }),
    );
    return { id: me.body.user.id, email: user.email, token: user.accessToken };
  };
  const owner = await newUser("owner");
  const as = { token: owner.token };
  const created = ok(
    "create workspace",
    await restCall(baseUrl, "POST", "/v1/workspaces", { name: `${label} workspace` }, as),
  );
  const ws = created.body.workspace.id as string;
  const base = `/v1/workspaces/${ws}`;
  const call = async (method: string, path: string, body?: unknown) =>
    ok(`${method} ${path}`, await restCall(baseUrl, method, `${base}${path}`, body, as)).body;

  const users: Record<Role, User> = { owner } as Record<Role, User>;
  for (const role of memberRoles) {
    const user = await newUser(role);
    const { link } = await call("POST", "/invites:refresh");
    const inviteToken = String(link).slice(String(link).lastIndexOf("/") + 1);
    ok("accept invitation", await restCall(baseUrl, "POST", `/v1/invites/${inviteToken}`, undefined, user));
    if (role !== "viewer") await call("POST", `/members/${user.id}?roleName=${role}`);
    users[role] = user;
  }
  const { link: inviteLink } = await call("POST", "/invites:refresh");

  const ssh = (
    await call("POST", "/certificate_authorities", {
      name: "ssh-users",
      keyType: "CERTIFICATE_KEY_TYPE_ED25519",
    })
  ).certificateAuthority.id;
  const x509 = (
    await call("POST", "/certificate_authorities", {
      name: "x509-users",
      keyType: "CERTIFICATE_KEY_TYPE_ECDSA",
      authorityType: "AUTHORITY_TYPE_X509",
    })
  ).certificateAuthority.id;
  const team = (await call("POST", "/teams", { name: "team-one", tags: ["fuzz"] })).team.id;
  await call("POST", `/teams/${team}/members/${users.editor.id}`);
  const target = (
    await call("POST", "/targets", { name: "target-one", endpoints: ["10.0.0.1:22"], tags: ["fuzz"] })
  ).target.id;
  await call("POST", "/principals", { targetId: target, usernames: ["deploy"] });
  const principal = (await call("GET", `/principals?targetId=${target}`)).principals[0].id;
  for (const [type, subject] of [
    ["PRINCIPAL_TYPE_USER", users.viewer.id],
    ["PRINCIPAL_TYPE_TEAM", team],
  ] as const) {
    await call("POST", "/principals:add", { id: principal, subjectIds: [subject], type });
  }
  const serviceAccount = async (role: "viewer" | "editor") => {
    const res = await call("POST", "/service_accounts", { name: `robot-${role}`, roleName: role });
    return { id: res.serviceAccount.id as string, token: res.token as string };
  };
  const serviceAccounts = { viewer: await serviceAccount("viewer"), editor: await serviceAccount("editor") };
  const domain = `${label.toLowerCase()}-${randomUUID().slice(0, 8)}.example.com`;
  await call("POST", "/domains", { domain });

  const { token: enrollToken } = await call("POST", "/enroll:refresh");
  const key = signingKey();
  const enrolled = ok(
    "enroll daemon",
    await connectCall(
      baseUrl,
      "platform.v1.DaemonService/EnrollDaemon",
      { token: enrollToken, authMethod: "soft", authPubkey: key.pem },
      { headers: { "platform-daemon-hostname": `${label.toLowerCase()}-host` } },
    ),
  ).body;
  const daemonId = enrolled.id as string;
  await call("PATCH", `/daemons/${daemonId}`, { status: "DAEMON_STATUS_ACCEPTED" });

  const ids: Record<IdKind, string[]> = {
    workspace: [ws],
    user: Object.values(users).map((u) => u.id),
    ca: [ssh, x509],
    team: [team],
    target: [target, String(enrolled.targetId ?? target)],
    principal: [principal],
    serviceAccount: [serviceAccounts.viewer.id, serviceAccounts.editor.id],
    daemon: [daemonId],
  };
  return {
    workspaceId: ws,
    users,
    serviceAccounts,
    daemon: { id: daemonId, key },
    domain,
    ids,
    secrets: [String(inviteLink).slice(String(inviteLink).lastIndexOf("/") + 1), enrollToken],
  };
}

export interface FuzzWorld {
  readonly a: WorkspaceFixture;
  readonly b: WorkspaceFixture;
  /** How many times A was rebuilt after a fuzzed request wrecked it. */
  readonly rebuilds: number;
  /** Headers that send a request as `caller` (signed for `procedure` when it is the daemon). */
  headersFor(caller: CallerName, procedure: string, garbage: string): Record<string, string>;
  /**
   * Values for string fields: A's and B's identifiers, A's secrets, keys and requests. A's values
   * are references (`⟪A:team:0⟫`), resolved when a case is sent: A may have been rebuilt since.
   */
  pools(): ValuePools;
  /** Replaces the references to A's values in every string of `value`. */
  resolve<T>(value: T): T;
  /** Checks A's callers still are what they were; rebuilds A when not. True when rebuilt. */
  ensureHealthy(): Promise<boolean>;
}

export async function createFuzzWorld(baseUrl: string, platform: Platform): Promise<FuzzWorld> {
  const b = await seedWorkspace(baseUrl, platform, "B");
  let a = await seedWorkspace(baseUrl, platform, "A");
  let rebuilds = 0;

  const loggedOut = await signUp(baseUrl, platform, "loggedout");
  ok("logout", await restCall(baseUrl, "POST", "/v1/logout", undefined, { token: loggedOut.accessToken }));
  const deleted = await signUp(baseUrl, platform, "deleted");
  ok(
    "delete account",
    await restCall(baseUrl, "DELETE", "/v1/account", undefined, { token: deleted.accessToken }),
  );

  const sshKeys = [sshEd25519PublicKey("fuzz@host"), sshEd25519PublicKey("fuzz@host")];
  const pems = [signingKey().pem];
  const csr = certificateRequest();

  const healthy = async (): Promise<boolean> => {
    const storage = platform.services.storage;
    if (!(await storage.workspaces.findById(a.workspaceId))) return false;
    for (const [role, user] of Object.entries(a.users)) {
      if ((await storage.members.find(a.workspaceId, user.id))?.role !== role) return false;
      const who = await platform.authenticate({ bearer: user.token }).catch(() => undefined);
      if (who?.caller.kind !== "user") return false;
    }
    for (const [role, account] of Object.entries(a.serviceAccounts)) {
      if ((await storage.serviceAccounts.findById(a.workspaceId, account.id))?.role !== role) return false;
      const who = await platform.authenticate({ bearer: account.token }).catch(() => undefined);
      if (who?.caller.kind !== "service_account") return false;
    }
    return (await storage.daemons.findById(a.workspaceId, a.daemon.id))?.status === "accepted";
  };

  return {
    get a() {
      return a;
    },
    b,
    get rebuilds() {
      return rebuilds;
    },
    headersFor(caller, procedure, garbage): Record<string, string> {
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
      switch (caller) {
        case "owner":
        case "admin":
        case "editor":
        case "viewer":
          return bearer(a.users[caller].token);
        case "owner-cookie":
          return { cookie: `session=${a.users.owner.token}` };
        case "sa-viewer":
          return bearer(a.serviceAccounts.viewer.token);
        case "sa-editor":
          return bearer(a.serviceAccounts.editor.token);
        case "daemon":
          return { authorization: platformChallenge(a.daemon.id, a.daemon.key, procedure) };
        case "anonymous":
          return {};
        case "logged-out":
          return bearer(loggedOut.accessToken);
        case "deleted-user":
          return bearer(deleted.accessToken);
        case "garbage":
          return { authorization: garbage };
      }
    },
    pools() {
      const ref = (...parts: Array<string | number>) => `⟪A:${parts.join(":")}⟫`;
      const ids = {} as Record<IdKind, string[]>;
      for (const [kind, values] of Object.entries(b.ids) as Array<[IdKind, readonly string[]]>) {
        ids[kind] = [...a.ids[kind].map((_, i) => ref(kind, i)), ...values];
      }
      return {
        ids,
        domains: [ref("domain"), b.domain],
        // B's addresses are left out: a password reset or sign-in attempt for one is B's business.
        emails: Object.keys(a.users).map((role) => ref("email", role)),
        secrets: a.secrets.map((_, i) => ref("secret", i)),
        passwords: [password],
        sshPublicKeys: sshKeys,
        p256Pems: pems,
        csrs: csr ? [csr] : [],
      };
    },
    resolve<T>(value: T): T {
      const lookup = (parts: string[]): string => {
        const [what, key] = parts;
        if (what === "domain") return a.domain;
        if (what === "email") return a.users[key as Role]?.email ?? "";
        if (what === "secret") return a.secrets[Number(key)] ?? "";
        return a.ids[what as IdKind]?.[Number(key)] ?? "";
      };
      const walk = (v: unknown): unknown => {
        if (typeof v === "string")
          return v.includes("⟪A:")
            ? v.replace(/⟪A:([^⟫]*)⟫/g, (_, ref: string) => lookup(ref.split(":")))
            : v;
        if (Array.isArray(v)) return v.map(walk);
        if (v !== null && typeof v === "object") {
          const out: Record<string, unknown> = {};
          for (const [k, inner] of Object.entries(v)) {
            Object.defineProperty(out, k, { value: walk(inner), enumerable: true, writable: true });
          }
          return out;
        }
        return v;
      };
      return walk(value) as T;
    },
    async ensureHealthy() {
      if (await healthy()) return false;
      a = await seedWorkspace(baseUrl, platform, `A${++rebuilds}x`);
      return true;
    },
  };
}

/** `Authorization` values that must not authenticate anyone. */
export function garbageAuthorizations(world: FuzzWorld): readonly string[] {
  const { a, b } = world;
  const hex = randomBytes(32).toString("hex");
  const otherKey = signingKey();
  return [
    "Bearer",
    "Bearer ",
    "Bearer garbage",
    "Bearer v4.public.eyJzdWIiOiJ4In0",
    `Bearer v4.public.${randomBytes(96).toString("base64url")}`,
    "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    // Service-account tokens with the right shape and the wrong secret, one naming B's account.
    `Bearer wapsa_${b.serviceAccounts.editor.id}_${hex}`,
    `Bearer wapsa_${a.serviceAccounts.editor.id}_${hex}`,
    `Bearer wapsa_${randomUUID()}_${hex}`,
    // A's PASETO service-account token with its claims rewritten to name B's workspace and account.
    `Bearer ${rewrittenClaims(a.serviceAccounts.editor.token, {
      sub: b.serviceAccounts.editor.id,
      wid: b.workspaceId,
    })}`,
    "Basic dXNlcjpwYXNzd29yZA==",
    "Platform",
    "Platform garbage",
    "Platform a:b:c:d:e",
    // Signed by a key the server does not know, for A's and for B's daemon.
    platformChallenge(a.daemon.id, otherKey, "/platform.v1.DaemonService/SyncDaemon"),
    platformChallenge(b.daemon.id, otherKey, "/platform.v1.DaemonService/SyncDaemon"),
    `Platform ${randomUUID()}:${Math.floor(Date.now() / 1000)}:00:/platform.v1.UserService/Whoami:AAAA`,
    `Platform ${a.daemon.id}:99999999999:00:/platform.v1.UserService/Whoami:AAAA`,
    `Bearer ${"x".repeat(8192)}`,
  ];
}
