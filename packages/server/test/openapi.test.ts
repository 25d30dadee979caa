/**
 * The OpenAPI document: generated from the descriptors (the committed file is current), served at
 * /openapi.json, and listing exactly the HTTP routes the server serves.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { platformServices } from "@wap/api";
import { publicProcedures } from "@wap/core";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppSettings, createApp } from "../src/app.js";
import { buildOpenApiDocument, openApiPath, openApiPathOfHono } from "../src/openapi/document.js";
import { createRestRoutes } from "../src/rest/index.js";

const committedFile = join(import.meta.dirname, "..", "openapi.json");
const committed = JSON.parse(readFileSync(committedFile, "utf8")) as {
  paths: Record<string, Record<string, { security: unknown[]; "x-rpc"?: string }>>;
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
