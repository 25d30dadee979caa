/**
 * Bad input on every RPC of the slice, over Connect (JSON, HTTP/1.1 fetch) and over REST: each
 * gets the right code, HTTP status and a message naming the field, and changes nothing.
 */
import { randomUUID } from "node:crypto";
import { connectCall, type JsonResponse, restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

interface Ids {
  readonly ws: string;
  readonly ca: string;
  readonly sa: string;
  readonly daemon: string;
}

interface Violation {
  /** Merged into the valid Connect request. */
  readonly patch: Record<string, unknown>;
  /** What the message must mention. */
  readonly names: RegExp;
}

interface Rpc {
  readonly procedure: string;
  readonly http: { readonly method: string; readonly path: (ids: Ids) => string; readonly body: boolean };
  /** A valid Connect request (every field in the body). */
  readonly valid: (ids: Ids) => Record<string, unknown>;
  /** Fields that go in the REST body (body rule `*`) once the path has taken its own. */
  readonly restBody?: (ids: Ids) => Record<string, unknown>;
  readonly wrongType: Violation;
  readonly outOfBounds: readonly Violation[];
  readonly badUuids: readonly Violation[];
  /** The request names a workspace (so another tenant's id must be not_found). */
  readonly scoped: boolean;
}

const long = (n: number) => "x".repeat(n);
const ws = "/v1/workspaces";

const rpcs: readonly Rpc[] = [
  {
    procedure: "platform.v1.WorkspaceService/CreateWorkspace",
    http: { method: "POST", path: () => ws, body: true },
    valid: () => ({ name: "a new workspace" }),
    restBody: () => ({ name: "a new workspace" }),
    wrongType: { patch: { name: 42 }, names: /name/ },
    outOfBounds: [
      { patch: { name: "ab" }, names: /name/ },
      { patch: { name: long(257) }, names: /name/ },
      { patch: { description: long(1001) }, names: /description/ },
    ],
    badUuids: [],
    scoped: false,
  },
  {
    procedure: "platform.v1.WorkspaceService/GetWorkspace",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}`, body: false },
    valid: (i) => ({ workspaceId: i.ws }),
    wrongType: { patch: { workspaceId: 7 }, names: /workspace_?[iI]d/ },
    outOfBounds: [],
    badUuids: [{ patch: { workspaceId: "not-a-uuid" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.WorkspaceService/ListWorkspaces",
    http: { method: "GET", path: () => ws, body: false },
    valid: () => ({}),
    wrongType: { patch: { bogusList: [] }, names: /bogusList/ },
    outOfBounds: [],
    badUuids: [],
    scoped: false,
  },
  {
    procedure: "platform.v1.WorkspaceService/UpdateWorkspace",
    http: { method: "PATCH", path: (i) => `${ws}/${i.ws}`, body: true },
    valid: (i) => ({ workspaceId: i.ws, description: "changed" }),
    restBody: () => ({ description: "changed" }),
    wrongType: { patch: { description: ["a"] }, names: /description/ },
    outOfBounds: [
      { patch: { name: "x" }, names: /name/ },
      { patch: { description: long(1001) }, names: /description/ },
    ],
    badUuids: [{ patch: { workspaceId: "123" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.WorkspaceService/DeleteWorkspace",
    http: { method: "DELETE", path: (i) => `${ws}/${i.ws}`, body: false },
    valid: (i) => ({ workspaceId: i.ws }),
    wrongType: { patch: { workspaceId: true }, names: /workspace_?[iI]d/ },
    outOfBounds: [],
    badUuids: [{ patch: { workspaceId: "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.CertificateService/CreateCertificateAuthority",
    http: { method: "POST", path: (i) => `${ws}/${i.ws}/certificate_authorities`, body: true },
    valid: (i) => ({ workspaceId: i.ws, name: "never-created", keyType: "CERTIFICATE_KEY_TYPE_ED25519" }),
    restBody: () => ({ name: "never-created", keyType: "CERTIFICATE_KEY_TYPE_ED25519" }),
    wrongType: { patch: { keyBits: "many" }, names: /key_?[bB]its/ },
    outOfBounds: [
      { patch: { name: "" }, names: /name/ },
      { patch: { keyType: "CERTIFICATE_KEY_TYPE_UNSPECIFIED" }, names: /keyType/ },
      { patch: { lifetime: "3600s" }, names: /lifetime/ },
      { patch: { lifetime: "315360001s" }, names: /lifetime/ },
      { patch: { userMaxTtl: "59s" }, names: /userMaxTtl/ },
      { patch: { hostDefaultTtl: "31536001s" }, names: /hostDefaultTtl/ },
      { patch: { description: long(1001) }, names: /description/ },
    ],
    badUuids: [{ patch: { workspaceId: "not-a-uuid" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.CertificateService/GetCertificateAuthority",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/certificate_authorities/${i.ca}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.ca }),
    wrongType: { patch: { id: { nested: true } }, names: /\bid\b/ },
    outOfBounds: [],
    badUuids: [
      { patch: { id: "nope" }, names: /\bid\b/ },
      { patch: { workspaceId: "nope" }, names: /workspaceId/ },
    ],
    scoped: true,
  },
  {
    procedure: "platform.v1.CertificateService/ListCertificateAuthorities",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/certificate_authorities`, body: false },
    valid: (i) => ({ workspaceId: i.ws }),
    wrongType: { patch: { workspaceId: 1.5 }, names: /workspace_?[iI]d/ },
    outOfBounds: [],
    badUuids: [{ patch: { workspaceId: "x" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.CertificateService/UpdateCertificateAuthority",
    http: { method: "PATCH", path: (i) => `${ws}/${i.ws}/certificate_authorities/${i.ca}`, body: true },
    valid: (i) => ({ workspaceId: i.ws, id: i.ca, description: "changed" }),
    restBody: () => ({ description: "changed" }),
    wrongType: { patch: { isActive: "yes" }, names: /is_?[aA]ctive/ },
    outOfBounds: [
      { patch: { name: "" }, names: /name/ },
      { patch: { lifetime: "2627999s" }, names: /lifetime/ },
      { patch: { userDefaultTtl: "1s" }, names: /userDefaultTtl/ },
      { patch: { description: long(1001) }, names: /description/ },
    ],
    badUuids: [{ patch: { id: "0000" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.CertificateService/DeleteCertificateAuthority",
    http: { method: "DELETE", path: (i) => `${ws}/${i.ws}/certificate_authorities/${i.ca}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.ca }),
    wrongType: { patch: { id: 12 }, names: /\bid\b/ },
    outOfBounds: [],
    badUuids: [{ patch: { id: "not-a-uuid" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.ServiceAccountService/CreateServiceAccount",
    http: { method: "POST", path: (i) => `${ws}/${i.ws}/service_accounts`, body: true },
    valid: (i) => ({ workspaceId: i.ws, name: "never-created" }),
    restBody: () => ({ name: "never-created" }),
    wrongType: { patch: { tags: "ci" }, names: /tags/ },
    outOfBounds: [
      { patch: { name: "" }, names: /name/ },
      { patch: { name: "-starts-with-dash" }, names: /name/ },
      { patch: { name: long(257) }, names: /name/ },
      { patch: { roleName: "admin" }, names: /roleName/ },
      { patch: { description: long(1001) }, names: /description/ },
      { patch: { expiresAt: "2001-01-01T00:00:00Z" }, names: /expiresAt/ },
    ],
    badUuids: [{ patch: { workspaceId: "not-a-uuid" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.ServiceAccountService/GetServiceAccount",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/service_accounts/${i.sa}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.sa }),
    wrongType: { patch: { id: false }, names: /\bid\b/ },
    outOfBounds: [],
    badUuids: [{ patch: { id: "abc" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.ServiceAccountService/ListServiceAccounts",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/service_accounts`, body: false },
    valid: (i) => ({ workspaceId: i.ws }),
    wrongType: { patch: { limit: "ten" }, names: /limit/ },
    outOfBounds: [
      { patch: { limit: 0 }, names: /limit/ },
      { patch: { limit: 101 }, names: /limit/ },
      { patch: { offset: -1 }, names: /offset/ },
    ],
    badUuids: [{ patch: { workspaceId: "not-a-uuid" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.ServiceAccountService/UpdateServiceAccount",
    http: { method: "PATCH", path: (i) => `${ws}/${i.ws}/service_accounts/${i.sa}`, body: true },
    valid: (i) => ({ workspaceId: i.ws, id: i.sa, description: "changed" }),
    restBody: () => ({ description: "changed" }),
    wrongType: { patch: { name: 3 }, names: /name/ },
    outOfBounds: [
      { patch: { roleName: "owner" }, names: /roleName/ },
      { patch: { name: "has space" }, names: /name/ },
    ],
    badUuids: [{ patch: { id: "x" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.ServiceAccountService/DeleteServiceAccount",
    http: { method: "DELETE", path: (i) => `${ws}/${i.ws}/service_accounts/${i.sa}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.sa }),
    wrongType: { patch: { id: [] }, names: /\bid\b/ },
    outOfBounds: [],
    badUuids: [{ patch: { id: "not-a-uuid" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.DaemonService/GetDaemon",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/daemons/${i.daemon}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.daemon }),
    wrongType: { patch: { id: 5 }, names: /\bid\b/ },
    outOfBounds: [],
    badUuids: [{ patch: { id: "not-a-uuid" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.DaemonService/ListDaemons",
    http: { method: "GET", path: (i) => `${ws}/${i.ws}/daemons`, body: false },
    valid: (i) => ({ workspaceId: i.ws }),
    wrongType: { patch: { online: "maybe" }, names: /online/ },
    outOfBounds: [
      { patch: { limit: 101 }, names: /limit/ },
      { patch: { offset: -5 }, names: /offset/ },
    ],
    badUuids: [{ patch: { workspaceId: "not-a-uuid" }, names: /workspaceId/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.DaemonService/UpdateDaemon",
    http: { method: "PATCH", path: (i) => `${ws}/${i.ws}/daemons/${i.daemon}`, body: true },
    valid: (i) => ({ workspaceId: i.ws, id: i.daemon, config: { recordSessions: true } }),
    restBody: () => ({ config: { recordSessions: true } }),
    wrongType: { patch: { config: "on" }, names: /config/i },
    outOfBounds: [
      { patch: { status: "DAEMON_STATUS_UNSPECIFIED" }, names: /status/ },
      { patch: { status: 42 }, names: /status/ },
    ],
    badUuids: [{ patch: { id: "not-a-uuid" }, names: /\bid\b/ }],
    scoped: true,
  },
  {
    procedure: "platform.v1.DaemonService/DeleteDaemon",
    http: { method: "DELETE", path: (i) => `${ws}/${i.ws}/daemons/${i.daemon}`, body: false },
    valid: (i) => ({ workspaceId: i.ws, id: i.daemon }),
    wrongType: { patch: { workspaceId: {} }, names: /workspace_?[iI]d/ },
    outOfBounds: [],
    badUuids: [{ patch: { id: "not-a-uuid" }, names: /\bid\b/ }],
    scoped: true,
  },
];

function expectError(
  res: JsonResponse,
  protocol: "connect" | "rest",
  code: string,
  status: number,
  names?: RegExp,
) {
  const context = JSON.stringify(res.body);
  expect(res.status, context).toBe(status);
  if (protocol === "connect") expect(res.body.code, context).toBe(code);
  else expect(res.body.code, context).toBe(restCodes[code]);
  expect(typeof res.body.message, context).toBe("string");
  if (names) expect(res.body.message, context).toMatch(names);
}

const restCodes: Record<string, number> = {
  invalid_argument: 3,
  not_found: 5,
  resource_exhausted: 8,
  unauthenticated: 16,
};

describe("bad input on every slice RPC", () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let other: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let mine: Ids;
  let theirs: Ids;

  async function fixture(user: typeof owner): Promise<Ids> {
    const ca = await restCall(
      server.url,
      "POST",
      `${ws}/${user.workspaceId}/certificate_authorities`,
      { name: "users", keyType: "CERTIFICATE_KEY_TYPE_ED25519" },
      { token: user.accessToken },
    );
    const sa = await restCall(
      server.url,
      "POST",
      `${ws}/${user.workspaceId}/service_accounts`,
      { name: "robot" },
      { token: user.accessToken },
    );
    expect(ca.status).toBe(200);
    expect(sa.status).toBe(200);
    return {
      ws: user.workspaceId,
      ca: ca.body.certificateAuthority.id,
      sa: sa.body.serviceAccount.id,
      daemon: randomUUID(),
    };
  }

  /** A's resources as A sees them; must be the same before and after B's attempts. */
  async function snapshot(ids: Ids, token: string) {
    const read = (path: string) =>
      restCall(server.url, "GET", path, undefined, { token }).then((r) => r.body);
    return {
      workspace: await read(`${ws}/${ids.ws}`),
      ca: await read(`${ws}/${ids.ws}/certificate_authorities/${ids.ca}`),
      cas: await read(`${ws}/${ids.ws}/certificate_authorities`),
      sa: await read(`${ws}/${ids.ws}/service_accounts/${ids.sa}`),
      sas: await read(`${ws}/${ids.ws}/service_accounts`),
    };
  }

  beforeAll(async () => {
    server = await startTestServer();
    owner = await signUpWithWorkspace(server.url, "owner");
    other = await signUpWithWorkspace(server.url, "other");
    mine = await fixture(owner);
    theirs = await fixture(other);
  });
  afterAll(async () => {
    await server.close();
  });

  for (const rpc of rpcs) {
    describe(rpc.procedure, () => {
      const call = (
        body: unknown,
        options: Parameters<typeof connectCall>[3] = { token: owner.accessToken },
      ) => connectCall(server.url, rpc.procedure, body, options);

      it("Connect: malformed JSON is invalid_argument", async () => {
        const res = await call(undefined, { token: owner.accessToken, rawBody: '{"workspaceId": ' });
        expectError(res, "connect", "invalid_argument", 400);
      });

      it("Connect: a field of the wrong type is invalid_argument naming it", async () => {
        const res = await call({ ...rpc.valid(mine), ...rpc.wrongType.patch });
        expectError(res, "connect", "invalid_argument", 400, rpc.wrongType.names);
      });

      it("Connect: an unknown field is invalid_argument naming it", async () => {
        const res = await call({ ...rpc.valid(mine), surpriseField: 1 });
        expectError(res, "connect", "invalid_argument", 400, /surpriseField/);
      });

      for (const violation of rpc.outOfBounds) {
        it(`Connect: out of bounds ${JSON.stringify(violation.patch).slice(0, 60)}`, async () => {
          const res = await call({ ...rpc.valid(mine), ...violation.patch });
          expectError(res, "connect", "invalid_argument", 400, violation.names);
        });
      }

      for (const violation of rpc.badUuids) {
        it(`Connect: bad uuid ${JSON.stringify(violation.patch)}`, async () => {
          const res = await call({ ...rpc.valid(mine), ...violation.patch });
          expectError(res, "connect", "invalid_argument", 400, violation.names);
        });
      }

      it("Connect: no credential is unauthenticated; a bad one too", async () => {
        expectError(await call(rpc.valid(mine), {}), "connect", "unauthenticated", 401);
        expectError(
          await call(rpc.valid(mine), { token: "v4.public.forged" }),
          "connect",
          "unauthenticated",
          401,
        );
        expectError(
          await call(rpc.valid(mine), { token: "wapsa_forged" }),
          "connect",
          "unauthenticated",
          401,
        );
      });

      if (rpc.scoped) {
        it("Connect: another workspace's ids are not_found", async () => {
          // B names A's workspace...
          expectError(await call(rpc.valid(mine), { token: other.accessToken }), "connect", "not_found", 404);
          // ...or B's own workspace with A's resource ids.
          const mixed = { ...mine, ws: theirs.ws };
          if (/Get|Update|Delete/.test(rpc.procedure) && !/WorkspaceService\//.test(rpc.procedure)) {
            expectError(
              await call(rpc.valid(mixed), { token: other.accessToken }),
              "connect",
              "not_found",
              404,
              /not found/,
            );
          }
        });
      }

      it("Connect: an oversized body is resource_exhausted", async () => {
        const res = await call({ ...rpc.valid(mine), description: long(1024 * 1024 + 10) });
        expectError(res, "connect", "resource_exhausted", 429);
      });

      // REST
      const restPath = (ids: Ids) => rpc.http.path(ids);
      const rest = (
        ids: Ids,
        body: unknown,
        options: Parameters<typeof restCall>[4] = { token: owner.accessToken },
        query = "",
      ) => restCall(server.url, rpc.http.method, `${restPath(ids)}${query}`, body, options);
      const restBody = (ids: Ids) => (rpc.http.body ? (rpc.restBody?.(ids) ?? {}) : undefined);

      // fetch sends no body with GET.
      if (rpc.http.method !== "GET") {
        it("REST: malformed JSON is invalid_argument (400)", async () => {
          const res = await rest(mine, undefined, { token: owner.accessToken, rawBody: "{ not json" });
          expectError(res, "rest", "invalid_argument", 400, /JSON/);
        });
      }

      it("REST: an unknown field is invalid_argument naming it", async () => {
        const res = rpc.http.body
          ? await rest(mine, { ...restBody(mine), surpriseField: 1 })
          : await rest(mine, undefined, { token: owner.accessToken }, "?surpriseField=1");
        expectError(res, "rest", "invalid_argument", 400, /surpriseField/);
      });

      if (rpc.http.body) {
        it("REST: a field of the wrong type is invalid_argument naming it", async () => {
          const res = await rest(mine, { ...restBody(mine), ...rpc.wrongType.patch });
          expectError(res, "rest", "invalid_argument", 400, rpc.wrongType.names);
        });
        for (const violation of rpc.outOfBounds) {
          it(`REST: out of bounds ${JSON.stringify(violation.patch).slice(0, 60)}`, async () => {
            const res = await rest(mine, { ...restBody(mine), ...violation.patch });
            expectError(res, "rest", "invalid_argument", 400, violation.names);
          });
        }
        it("REST: an oversized body is 413 resource_exhausted", async () => {
          const res = await rest(mine, { ...restBody(mine), description: long(1024 * 1024 + 10) });
          expectError(res, "rest", "resource_exhausted", 413, /limit/);
        });
      } else if (rpc.outOfBounds.length > 0) {
        it("REST: out-of-bounds and wrong-type query values are invalid_argument naming them", async () => {
          for (const violation of [...rpc.outOfBounds, rpc.wrongType]) {
            const query = `?${new URLSearchParams(Object.entries(violation.patch).map(([k, v]): [string, string] => [k, String(v)]))}`;
            const res = await rest(mine, undefined, { token: owner.accessToken }, query);
            expectError(res, "rest", "invalid_argument", 400, violation.names);
          }
        });
      }

      for (const violation of rpc.badUuids) {
        it(`REST: bad uuid in the path ${JSON.stringify(violation.patch)}`, async () => {
          const [field, value] = Object.entries(violation.patch)[0] as [string, string];
          const ids = {
            ...mine,
            ...(field === "workspaceId" ? { ws: value } : { ca: value, sa: value, daemon: value }),
          };
          const res = await rest(ids, restBody(ids));
          expectError(res, "rest", "invalid_argument", 400, violation.names);
        });
      }

      it("REST: no credential is 401 unauthenticated; a bad one too", async () => {
        expectError(await rest(mine, restBody(mine), {}), "rest", "unauthenticated", 401);
        expectError(await rest(mine, restBody(mine), { token: "garbage" }), "rest", "unauthenticated", 401);
      });

      if (rpc.scoped) {
        it("REST: another workspace's ids are 404 not_found", async () => {
          expectError(
            await rest(mine, restBody(mine), { token: other.accessToken }),
            "rest",
            "not_found",
            404,
          );
        });
      }
    });
  }

  it("nothing the bad requests tried changed anything", async () => {
    // Runs last (vitest runs a file's tests in order): every attempt above was refused.
    const before = await snapshot(mine, owner.accessToken);
    expect(before.workspace.workspace.name).toBe("owner workspace");
    expect(before.workspace.workspace.description).toBe("");
    expect(before.ca.certificateAuthority.description).toBe("");
    expect(before.cas.certificateAuthorities).toHaveLength(1);
    expect(before.sa.serviceAccount.description).toBe("");
    expect(before.sas.serviceAccounts).toHaveLength(1);
    const theirsNow = await snapshot(theirs, other.accessToken);
    expect(theirsNow.cas.certificateAuthorities).toHaveLength(1);
    expect(theirsNow.sas.serviceAccounts).toHaveLength(1);
    const workspaces = await restCall(server.url, "GET", ws, undefined, { token: owner.accessToken });
    expect(workspaces.body.workspaces).toHaveLength(1);
  });

  it("sign-up and sign-in refuse bad input naming the field (Connect and REST)", async () => {
    const valid = {
      name: "Valid Name",
      email: "valid@example.com",
      username: "validuser",
      password: "long enough pw",
    };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ email: "not-an-email" }, /email/],
      [{ password: "short" }, /password/],
      [{ password: long(257) }, /password/],
      [{ username: "-bad-" }, /username/],
      [{ name: "ab" }, /name/],
      [{ name: 12 }, /name/],
      [{ extra: true }, /extra/],
    ];
    for (const [patch, names] of cases) {
      const connect = await connectCall(server.url, "platform.v1.AuthService/Register", {
        ...valid,
        ...patch,
      });
      expectError(connect, "connect", "invalid_argument", 400, names);
      const rest = await restCall(server.url, "POST", "/v1/register", { ...valid, ...patch });
      expectError(rest, "rest", "invalid_argument", 400, names);
    }
    // None of them created the account: the real sign-up still goes through and signs in.
    expect((await restCall(server.url, "POST", "/v1/register", valid)).status).toBe(200);
    const login = await restCall(server.url, "POST", "/v1/login", {
      email: valid.email,
      password: valid.password,
    });
    expect(login.status).toBe(200);
    expectError(
      await connectCall(server.url, "platform.v1.AuthService/Login", { email: valid.email, password: 5 }),
      "connect",
      "invalid_argument",
      400,
      /password/,
    );
    // A refresh token may come in the JSON body (kept out of URLs): it is read and checked there.
    expectError(
      await restCall(server.url, "POST", "/v1/refresh-token", { refreshToken: "x" }),
      "rest",
      "unauthenticated",
      401,
      /refresh token/,
    );
    expectError(
      await restCall(server.url, "POST", "/v1/refresh-token", { refreshToken: 5 }),
      "rest",
      "invalid_argument",
      400,
      /refreshToken/,
    );
  });

  it("CreateWorkspace accepts a name exactly when it has 3 to 256 characters (both sides of the bound)", async () => {
    const names: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 300 }), async (length) => {
        const res = await restCall(
          server.url,
          "POST",
          "/v1/workspaces",
          { name: "n".repeat(length) },
          {
            token: other.accessToken,
          },
        );
        if (res.status === 200) names.push(res.body.workspace.id);
        expect(res.status).toBe(length >= 3 && length <= 256 ? 200 : 400);
      }),
      { numRuns: 40, examples: [[2], [3], [256], [257], [0]] },
    );
    for (const id of names)
      await restCall(server.url, "DELETE", `${ws}/${id}`, undefined, { token: other.accessToken });
  });
});
