import type { DescService } from "@bufbuild/protobuf";
import * as api from "@wap/api";
import { InvalidArgumentError } from "@wap/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildRequest, createRestRoutes, type RestRequestInput } from "./index.js";

const services = Object.values(api as Record<string, unknown>).filter(
  (v): v is DescService => typeof v === "object" && v !== null && "kind" in v && v.kind === "service",
);
const routes = createRestRoutes(services);
const uuid = "3f1c2a9e-8b7d-4c6e-9a5f-0d1e2f3a4b5c";

// Binary strings include lone surrogates, which URL decoding rejects.
const noise = fc.oneof(fc.string(), fc.string({ unit: "binary" }));

// Segments that reach deep into the route table, mixed with noise.
const segment = fc.oneof(
  fc.constantFrom(
    "v1",
    "workspaces",
    uuid,
    "members",
    "targets",
    "filters",
    "access",
    "domains",
    "a.example.com:verify",
    "events:subscribe",
    "principals:add",
    "audit:export",
    "audit",
    "invites",
    "sso",
    "credentials",
    "passkeys",
    "certificate_authorities",
    "x:rollover",
    "%40",
    "%zz",
    "%E0%A4%A",
    "%2F",
    "",
    ":",
  ),
  noise,
);
const path = fc.oneof(
  noise,
  fc.webPath(),
  fc.array(segment, { maxLength: 8 }).map((s) => `/${s.join("/")}`),
);
const httpMethod = fc.oneof(
  fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "get"),
  fc.string(),
);

const key = fc.oneof(
  fc.constantFrom(
    "limit",
    "offset",
    "query",
    "teamIds",
    "team_ids",
    "type",
    "online",
    "status",
    "startDate",
    "end_date",
    "workspaceId",
    "workspace_id",
    "id",
    "refreshToken",
    "roleName",
    "eventTypes",
    "config.recordSessions",
    "config",
    "a.b.c",
    "__proto__",
    "constructor",
    "toString",
    "",
  ),
  noise,
);
const value = fc.oneof(
  fc.constantFrom(
    "1",
    "-1",
    "1e3",
    "1.5",
    "true",
    "false",
    "NaN",
    "PRINCIPAL_TYPE_TEAM",
    "2026-01-01T00:00:00Z",
    "60s",
    uuid,
    "",
  ),
  noise,
);
const query = fc.oneof(
  noise.map((s) => new URLSearchParams(s)),
  fc.array(fc.tuple(key, value), { maxLength: 6 }).map((pairs) => new URLSearchParams(pairs)),
);
const body: fc.Arbitrary<Omit<RestRequestInput, "query">> = fc.oneof(
  fc.constant({}),
  fc.jsonValue().map((b) => ({ body: b })),
  fc.dictionary(key, fc.jsonValue(), { maxKeys: 5 }).map((b) => ({ body: b })),
  noise.map((bodyText) => ({ bodyText })),
  fc.jsonValue().map((b) => ({ bodyText: JSON.stringify(b) })),
);

/** Runs the whole transcoding step; anything but an InvalidArgumentError is a bug. */
function transcode(m: string, p: string, q: URLSearchParams, b: Omit<RestRequestInput, "query">): void {
  try {
    const match = routes.match(m, p);
    if (match !== null && "method" in match) buildRequest(match, { ...b, query: q });
  } catch (e) {
    if (!(e instanceof InvalidArgumentError)) throw e;
    expect(e.message.length).toBeGreaterThan(0);
  }
}

describe("REST transcoding properties", () => {
  it("random paths, methods, query strings and bodies only ever fail with InvalidArgumentError", () => {
    fc.assert(
      fc.property(httpMethod, path, query, body, (m, p, q, b) => transcode(m, p, q, b)),
      { numRuns: 3000 },
    );
  });

  it("random queries and bodies on real routes only ever fail with InvalidArgumentError", () => {
    const paths = fc.constantFrom(
      ["GET", `/v1/workspaces/${uuid}/members`],
      ["GET", `/v1/workspaces/${uuid}/principals`],
      ["GET", `/v1/workspaces/${uuid}/daemons`],
      ["GET", "/v1/audit"],
      ["POST", "/v1/refresh-token"],
      ["POST", `/v1/workspaces/${uuid}/members/${uuid}`],
      ["PATCH", `/v1/workspaces/${uuid}/certificate_authorities/${uuid}`],
      ["PATCH", `/v1/workspaces/${uuid}/daemons/${uuid}`],
      ["POST", `/v1/workspaces/${uuid}/teams`],
      ["GET", `/v1/workspaces/${uuid}/events:subscribe`],
    );
    fc.assert(
      fc.property(paths, query, body, ([m, p], q, b) => transcode(m, p, q, b)),
      { numRuns: 3000 },
    );
  });

  it("any non-empty path parameter survives percent-encoding", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, unit: "grapheme" }), (s) => {
        const m = routes.match("GET", `/v1/sso/${encodeURIComponent(s)}`);
        expect(m).not.toBeNull();
        expect(m && "method" in m ? m.pathParams.email : undefined).toBe(s);
      }),
    );
  });

  it("any string query value reaches its string field unchanged", () => {
    const m = routes.match("GET", `/v1/workspaces/${uuid}/daemons`);
    if (m === null || !("method" in m)) throw new Error("no route");
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (s) => {
        const req = buildRequest(m, { query: new URLSearchParams([["query", s]]) });
        expect((req as unknown as { query: string }).query).toBe(s);
      }),
    );
  });
});
