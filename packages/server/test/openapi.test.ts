/**
 * The OpenAPI document: generated from the descriptors (the committed file is current), served at
 * /openapi.json, and listing exactly the HTTP routes the server serves.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { platformServices } from "@wap/api";
import { publicProcedures } from "@wap/core/internal";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppSettings, createApp } from "../src/app.js";
import { buildOpenApiDocument, openApiPath, openApiPathOfHono } from "../src/openapi/document.js";
import { createRestRoutes } from "../src/rest/index.js";

const committedFile = join(import.meta.dirname, "..", "openapi.json");
const committed = JSON.parse(readFileSync(committedFile, "utf8")) as {
  paths: Record<
    string,
    Record<string, { security: unknown[]; "x-rpc"?: string; responses: Record<string, unknown> }>
  >;
  components: { securitySchemes: Record<string, unknown> };
};
const httpMethods = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

/** `METHOD path` of every operation in the document. */
function documented(): Set<string> {
  const found = new Set<string>();
  for (const [path, item] of Object.entries(committed.paths)) {
    for (const method of Object.keys(item))
      if (httpMethods.has(method)) found.add(`${method.toUpperCase()} ${path}`);
  }
  return found;
}

/** `METHOD path` of every route the server routes: the REST table and the Hono app's own routes. */
function served(): Set<string> {
  const found = new Set<string>();
  for (const route of createRestRoutes(platformServices).routes)
    found.add(`${route.httpMethod} ${openApiPath(route)}`);
  // Building the app registers its routes; none of the settings is read until a request comes.
  const app = createApp({
    edge: {},
    storage: {},
    bodyLimitBytes: 1,
    shutdownSignal: new AbortController().signal,
  } as unknown as AppSettings);
  for (const route of app.routes) {
    // The catch-all hands everything else to the REST table, counted above.
    if (route.path === "*" || route.path === "/*") continue;
    found.add(`${route.method} ${openApiPathOfHono(route.path)}`);
  }
  return found;
}

/** The first line a raw HTTP/1.1 request over TCP is answered with. */
async function statusLine(port: number, request: string): Promise<string> {
  const socket = connect(port, "127.0.0.1");
  socket.end(request);
  let answer = "";
  for await (const chunk of socket) answer += (chunk as Buffer).toString("latin1");
  return answer.split("\r\n", 1)[0]!;
}

describe("the OpenAPI document", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("is the one the descriptors generate (run `pnpm generate` after changing a proto)", () => {
    const version = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8")).version;
    const generated = buildOpenApiDocument({
      services: platformServices,
      version,
      publicProcedures: publicProcedures(),
    });
    expect(JSON.parse(JSON.stringify(generated))).toEqual(committed);
  });

  it("lists every route the server serves, and nothing else", () => {
    const inDocument = documented();
    const routed = served();
    expect([...routed].filter((r) => !inDocument.has(r))).toEqual([]);
    expect([...inDocument].filter((r) => !routed.has(r))).toEqual([]);
    expect(inDocument.size).toBeGreaterThan(80);
  });

  it("every documented route reaches a handler on the running server (never 'no route' or 405)", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    for (const entry of documented()) {
      const [method, path] = entry.split(" ") as [string, string];
      const url = `${server.url}${path.replace(/\{[^}]+\}/g, id)}`;
      const response = await fetch(url, {
        method,
        redirect: "manual",
        ...(method !== "GET" && { headers: { "content-type": "application/json" }, body: "{}" }),
      });
      const text = await response.text();
      expect(response.status, entry).not.toBe(405);
      expect(text, entry).not.toContain("NO_ROUTE");
      // Every refusal, whichever endpoint answers it, is written alike: never cached.
      if (response.status >= 400) {
        expect(response.headers.get("content-type"), entry).toMatch(/^(application\/json|text\/html)/);
        expect(response.headers.get("cache-control"), entry).toBe("no-store");
      }
    }
    const unknown = await fetch(`${server.url}/v1/not-a-route`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("NO_ROUTE");
    expect(unknown.headers.get("cache-control")).toBe("no-store");
  });

  it("documents the probes' only client errors, the HTTP layer's refusals of unreadable requests", async () => {
    for (const probe of ["/healthz", "/readyz"]) {
      expect(Object.keys(committed.paths[probe]!.get!.responses)).toEqual(
        expect.arrayContaining(["200", "4XX"]),
      );
      const big = `GET ${probe} HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
      expect(await statusLine(server.port, big)).toBe("HTTP/1.1 431 Request Header Fields Too Large");
      const malformed = `GET ${probe} HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n`;
      expect(await statusLine(server.port, malformed)).toBe("HTTP/1.1 400 Bad Request");
    }
  });

  it("is served at /openapi.json, with both credentials described and public RPCs open", async () => {
    const response = await fetch(`${server.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toEqual(committed);
    expect(committed.components.securitySchemes).toMatchObject({
      bearerAuth: { type: "http", scheme: "bearer" },
      sessionCookie: { type: "apiKey", in: "cookie", name: "session" },
    });
    expect(committed.paths["/v1/login"]?.post?.security).toEqual([]);
    expect(committed.paths["/v1/whoami"]?.get?.security).toEqual([{ bearerAuth: [] }, { sessionCookie: [] }]);
  });
});

describe("/openapi.json past the edge", () => {
  it("is counted against the rate limit and refused over it, as documented", async () => {
    const limited = await startTestServer({ rateLimit: { anonymousPoints: 2 } });
    try {
      for (let i = 0; i < 2; i++) expect((await fetch(`${limited.url}/openapi.json`)).status).toBe(200);
      const refused = await fetch(`${limited.url}/openapi.json`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await refused.json()).toMatchObject({ code: 8, details: [{ reason: "RATE_LIMITED" }] });
      expect(committed.paths["/openapi.json"]!.get!.responses).toHaveProperty("429");
    } finally {
      await limited.close();
    }
  });
});
