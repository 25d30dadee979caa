import { type DescService, isFieldSet, type Message } from "@bufbuild/protobuf";
import * as api from "@wap/api";
import {
  ListAuditLogsRequestSchema,
  ListDaemonsRequestSchema,
  ListPrincipalsRequestSchema,
  ListWorkspaceMembersRequestSchema,
  RefreshTokenRequestSchema,
  UpdateCertificateAuthorityRequestSchema,
  UpdateDaemonRequestSchema,
  UpdateWorkspaceMemberRequestSchema,
} from "@wap/api";
import { InvalidArgumentError } from "@wap/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  buildRequest,
  createRestRoutes,
  parseJsonBody,
  type RestMatch,
  type RestRequestInput,
} from "./index.js";

const services = Object.values(api as Record<string, unknown>).filter(
  (v): v is DescService => typeof v === "object" && v !== null && "kind" in v && v.kind === "service",
);
const routes = createRestRoutes(services);

const ws = "3f1c2a9e-8b7d-4c6e-9a5f-0d1e2f3a4b5c";
const user = "7a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d";

function route(httpMethod: string, path: string): RestMatch {
  const m = routes.match(httpMethod, path);
  if (m === null || !("method" in m)) throw new Error(`no route for ${httpMethod} ${path}`);
  return m;
}

function build(
  httpMethod: string,
  pathAndQuery: string,
  input: Omit<RestRequestInput, "query"> = {},
): Message {
  const url = new URL(pathAndQuery, "http://localhost");
  return buildRequest(route(httpMethod, url.pathname), { ...input, query: url.searchParams });
}

/** The InvalidArgumentError a call throws (fails the test if it throws anything else or nothing). */
function invalid(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidArgumentError);
    return e as InvalidArgumentError;
  }
  throw new Error("expected an InvalidArgumentError");
}

/** A match for `method` under a made-up rule, to exercise query types no annotated no-body RPC has. */
function queryOnly(
  service: DescService,
  rpc: string,
  body = "",
  pathParams: Record<string, string> = {},
): RestMatch {
  const method = service.methods.find((m) => m.name === rpc)!;
  const rule = {
    $typeName: "google.api.HttpRule",
    selector: "",
    pattern: { case: "get", value: "/test" },
    body,
    responseBody: "",
    additionalBindings: [],
  } as unknown as api.HttpRule;
  return { method, rule, template: "/test", pathParams };
}

describe("path binding", () => {
  it("binds path variables to their fields by proto name", () => {
    const req = build("GET", `/v1/workspaces/${ws}/members/${user}`);
    expect(req).toMatchObject({ workspaceId: ws, userId: user });
  });

  it("accepts a body copy of a path field when it is equal, by either name", () => {
    for (const key of ["workspaceId", "workspace_id"]) {
      const req = build("PATCH", `/v1/workspaces/${ws}`, { body: { [key]: ws, name: "Acme" } });
      expect(req).toMatchObject({ workspaceId: ws, name: "Acme" });
    }
  });

  it("rejects a body copy of a path field that differs, naming it", () => {
    const e = invalid(() =>
      build("PATCH", `/v1/workspaces/${ws}/certificate_authorities/${user}`, { body: { id: ws } }),
    );
    expect(e.message).toMatch(/\{id\}/);
    expect(e.message).toContain(ws);
    expect(e.violations[0]?.field).toBe("id");
  });

  it("shows a body copy of a path field that is an object or array briefly, however deep", () => {
    const depth = 100_000;
    const bodyText = `{"id":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`;
    const e = invalid(() =>
      build("PATCH", `/v1/workspaces/${ws}/certificate_authorities/${user}`, { bodyText }),
    );
    expect(e.message).toMatch(/the request body has id = an object; leave it out of the body/);
    const list = invalid(() =>
      build("PATCH", `/v1/workspaces/${ws}/certificate_authorities/${user}`, { body: { id: [ws] } }),
    );
    expect(list.message).toContain(`id = ["${ws}"]`);
    const field = invalid(() =>
      build("PATCH", `/v1/workspaces/${ws}`, {
        bodyText: `{"name":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`,
      }),
    );
    expect(field.violations[0]?.description).toMatch(/\(got an object\)$/);
  });

  it("rejects a query copy of a path field that differs and ignores an equal one", () => {
    expect(build("GET", `/v1/workspaces/${ws}?workspaceId=${ws}`)).toMatchObject({ workspaceId: ws });
    expect(invalid(() => build("GET", `/v1/workspaces/${ws}?workspace_id=${user}`)).message).toMatch(
      /workspace_id/,
    );
  });

  it("does not mutate the caller's body", () => {
    const body = { workspace_id: ws, name: "Acme" };
    build("PATCH", `/v1/workspaces/${ws}`, { body });
    expect(body).toEqual({ workspace_id: ws, name: "Acme" });
  });
});

describe("query binding (no body rule)", () => {
  it("reads every field of a body-less POST from the query", () => {
    const refresh = build("POST", "/v1/refresh-token?refreshToken=rt_abc.def");
    expect(refresh.$typeName).toBe(RefreshTokenRequestSchema.typeName);
    expect(refresh).toMatchObject({ refreshToken: "rt_abc.def" });

    const member = build("POST", `/v1/workspaces/${ws}/members/${user}?roleName=admin`);
    expect(member.$typeName).toBe(UpdateWorkspaceMemberRequestSchema.typeName);
    expect(member).toMatchObject({ workspaceId: ws, userId: user, roleName: "admin" });
  });

  it("accepts snake_case keys", () => {
    expect(build("POST", "/v1/refresh-token?refresh_token=x")).toMatchObject({ refreshToken: "x" });
    expect(build("POST", `/v1/workspaces/${ws}/members/${user}?role_name=viewer`)).toMatchObject({
      roleName: "viewer",
    });
  });

  it("collects a repeated field from a repeated key, never by splitting commas", () => {
    const req = build(
      "GET",
      `/v1/workspaces/${ws}/members?teamIds=${ws}&team_ids=${user}&teamIds=a,b&limit=10&offset=0`,
    );
    expect(req.$typeName).toBe(ListWorkspaceMembersRequestSchema.typeName);
    expect(req).toMatchObject({ teamIds: [ws, user, "a,b"], limit: 10, offset: 0 });
  });

  it("reads enums by name or number", () => {
    const byName = build("GET", `/v1/workspaces/${ws}/principals?type=PRINCIPAL_TYPE_TEAM`);
    const byNumber = build("GET", `/v1/workspaces/${ws}/principals?type=2`);
    expect(byName.$typeName).toBe(ListPrincipalsRequestSchema.typeName);
    expect(byName).toMatchObject({ type: 2 });
    expect(byNumber).toMatchObject({ type: 2 });
    const e = invalid(() => build("GET", `/v1/workspaces/${ws}/principals?type=TEAM`));
    expect(e.message).toContain("PRINCIPAL_TYPE_TEAM");
  });

  it("reads bools as true/false and ints strictly", () => {
    const req = build("GET", `/v1/workspaces/${ws}/daemons?online=false&limit=5`);
    expect(req.$typeName).toBe(ListDaemonsRequestSchema.typeName);
    expect(req).toMatchObject({ online: false, limit: 5 });
    expect(isFieldSet(req as never, ListDaemonsRequestSchema.field.online)).toBe(true);
    expect(invalid(() => build("GET", `/v1/workspaces/${ws}/daemons?online=yes`)).message).toMatch(
      /"online".*true or false/,
    );
    expect(invalid(() => build("GET", `/v1/workspaces/${ws}/daemons?limit=1.5`)).message).toMatch(/integer/);
    expect(invalid(() => build("GET", `/v1/workspaces/${ws}/daemons?limit=99999999999`)).message).toMatch(
      /limit/,
    );
  });

  it("reads timestamps in their JSON string form", () => {
    const req = build(
      "GET",
      `/v1/audit?workspaceId=${ws}&startDate=2026-01-02T03:04:05Z&end_date=2026-02-01T00:00:00.5%2B01:00&actions=login&actions=logout`,
    );
    expect(req.$typeName).toBe(ListAuditLogsRequestSchema.typeName);
    expect(req).toMatchObject({
      workspaceId: ws,
      startDate: { seconds: BigInt(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000), nanos: 0 },
      endDate: { seconds: BigInt(Date.UTC(2026, 0, 31, 23, 0, 0) / 1000), nanos: 500_000_000 },
      actions: ["login", "logout"],
    });
    expect(invalid(() => build("GET", "/v1/audit?startDate=yesterday")).message).toMatch(
      /"startDate".*RFC 3339/,
    );
  });

  it("reads durations, repeated enums and dotted nested fields (under a query-only rule)", () => {
    const ca = queryOnly(api.CertificateService, "UpdateCertificateAuthority");
    const req = buildRequest(ca, {
      query: new URLSearchParams(
        "lifetime=2628000s&userMaxTtl=1.5s&allowedKeyTypes=1&allowed_key_types=CERTIFICATE_KEY_TYPE_ED25519",
      ),
    });
    expect(req).toMatchObject({
      lifetime: { seconds: 2628000n, nanos: 0 },
      userMaxTtl: { seconds: 1n, nanos: 500_000_000 },
    });
    expect((req as unknown as { allowedKeyTypes: number[] }).allowedKeyTypes).toEqual([1, 3]);
    expect(invalid(() => buildRequest(ca, { query: new URLSearchParams("lifetime=1h") })).message).toMatch(
      /"lifetime".*"3600s"/,
    );

    const daemon = queryOnly(api.DaemonService, "UpdateDaemon");
    const nested = buildRequest(daemon, { query: new URLSearchParams("config.recordSessions=true") });
    expect(nested.$typeName).toBe(UpdateDaemonRequestSchema.typeName);
    expect(nested).toMatchObject({ config: { recordSessions: true } });
    expect(
      buildRequest(daemon, { query: new URLSearchParams("config.record_sessions=false") }),
    ).toMatchObject({
      config: { recordSessions: false },
    });
    expect(invalid(() => buildRequest(daemon, { query: new URLSearchParams("config=x") })).message).toMatch(
      /dotted keys/,
    );
  });

  it("rejects unknown keys, listing the accepted ones", () => {
    const e = invalid(() => build("GET", `/v1/workspaces/${ws}/members?teamId=${ws}`));
    expect(e.message).toContain('"teamId"');
    expect(e.message).toContain("teamIds");
    expect(invalid(() => build("GET", "/v1/version?x=1")).message).toMatch(/takes no query parameters/);
  });

  it("rejects a singular key given twice", () => {
    expect(invalid(() => build("POST", "/v1/refresh-token?refreshToken=a&refresh_token=b")).message).toMatch(
      /2 times/,
    );
  });

  it("refuses a JSON body on a rule without one, but tolerates {}", () => {
    expect(build("POST", "/v1/refresh-token?refreshToken=a", { body: {} })).toMatchObject({
      refreshToken: "a",
    });
    expect(build("POST", "/v1/refresh-token?refreshToken=a", { bodyText: "  " })).toMatchObject({
      refreshToken: "a",
    });
  });

  it("takes the fields of a POST without a body rule from a JSON body too, so secrets stay out of URLs", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 64 }), (token) => {
        expect(build("POST", "/v1/refresh-token", { body: { refreshToken: token } })).toMatchObject({
          refreshToken: token,
        });
        expect(build("POST", `/v1/refresh-token?refreshToken=${encodeURIComponent(token)}`)).toMatchObject({
          refreshToken: token,
        });
      }),
    );
    const twice = invalid(() =>
      build("POST", "/v1/refresh-token?refreshToken=a", { body: { refreshToken: "b" } }),
    );
    expect(twice.message).toMatch(/refreshToken is also in the request body/);
    expect(invalid(() => build("POST", "/v1/refresh-token", { body: ["a"] })).message).toMatch(/JSON object/);
    expect(invalid(() => build("POST", "/v1/refresh-token", { body: { nope: "a" } })).message).toMatch(
      /"nope" is unknown/,
    );
  });
});

describe("body binding (body: *)", () => {
  it("takes every non-path field from the body", () => {
    const req = build("POST", `/v1/workspaces/${ws}/teams`, { body: { name: "ops", description: "Ops" } });
    expect(req).toMatchObject({ workspaceId: ws, name: "ops", description: "Ops" });
  });

  it("rejects query parameters", () => {
    expect(invalid(() => build("POST", `/v1/workspaces/${ws}/teams?name=ops`)).message).toMatch(/JSON body/);
  });

  it("rejects unknown body fields", () => {
    const e = invalid(() => build("POST", `/v1/workspaces/${ws}/teams`, { body: { nmae: "ops" } }));
    expect(e.message).toMatch(/"nmae" is unknown/);
  });

  it("rejects a body that is not an object", () => {
    for (const body of [null, [], "x", 3]) {
      expect(invalid(() => build("POST", `/v1/workspaces/${ws}/teams`, { body })).message).toMatch(
        /JSON object/,
      );
    }
  });

  it("rejects malformed JSON", () => {
    const e = invalid(() => build("POST", `/v1/workspaces/${ws}/teams`, { bodyText: '{"name": ' }));
    expect(e.message).toMatch(/^request body is not valid JSON: /);
    expect(() => parseJsonBody("{")).toThrow(InvalidArgumentError);
    expect(parseJsonBody("")).toBeUndefined();
  });

  it("keeps explicit presence: an omitted field stays unset, a false one is set", () => {
    const req = build("PATCH", `/v1/workspaces/${ws}/certificate_authorities/${user}`, {
      body: { isActive: false },
    });
    const f = UpdateCertificateAuthorityRequestSchema.field;
    expect(isFieldSet(req as never, f.isActive)).toBe(true);
    expect(isFieldSet(req as never, f.name)).toBe(false);
    expect(isFieldSet(req as never, f.lifetime)).toBe(false);
    expect(isFieldSet(req as never, f.id)).toBe(true);
  });

  it("accepts an empty body as an empty request", () => {
    const req = build("POST", "/v1/audit:export");
    expect(req.$typeName).toBe("platform.v1.ExportAuditLogsRequest");
  });

  it("rejects a field given under both of its names", () => {
    const e = invalid(() =>
      build("PATCH", `/v1/workspaces/${ws}`, { body: { workspaceId: ws, workspace_id: ws } }),
    );
    expect(e.message).toMatch(/twice/);
  });
});

describe("body binding (body: <field>, under a made-up rule; no annotation uses it)", () => {
  const match = queryOnly(api.DaemonService, "UpdateDaemon", "config", { workspace_id: ws, id: user });

  it("binds the body to that one field and the rest to path and query", () => {
    const req = buildRequest(match, {
      body: { recordSessions: true },
      query: new URLSearchParams("status=1"),
    });
    expect(req).toMatchObject({
      workspaceId: ws,
      id: user,
      status: 1,
      config: { recordSessions: true },
    });
    const unset = buildRequest(match, { body: {} });
    expect(isFieldSet(unset as never, UpdateDaemonRequestSchema.field.status)).toBe(false);
    expect(isFieldSet(unset as never, UpdateDaemonRequestSchema.field.config)).toBe(true);
  });

  it("refuses the body field in the query", () => {
    const e = invalid(() =>
      buildRequest(match, { query: new URLSearchParams("config.recordSessions=true") }),
    );
    expect(e.message).toMatch(/taken from the request body/);
  });
});
