/**
 * The OpenAPI 3.1 document of the REST surface, built from the services' descriptors and their
 * `google.api.http` annotations (the same route table the server routes by), plus the few HTTP
 * endpoints that are not RPCs (probes, SSO sign-in, the billing webhook). `pnpm generate` writes it
 * to `packages/server/openapi.json`; the server serves that file at `/openapi.json`.
 *
 * @module
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { createRestRoutes, type RestRoute } from "../rest/index.js";
import { type JsonSchema, SchemaCollector } from "./schemas.js";

export interface OpenApiOptions {
  readonly services: readonly DescService[];
  readonly version: string;
  /** Procedure paths callable without a credential. */
  readonly publicProcedures: ReadonlySet<string>;
}

type Operation = Record<string, unknown>;

/** An HTTP endpoint that is not an RPC, as the Hono app mounts it (`:name` parameters). */
interface PlainRoute {
  readonly method: "get" | "post";
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly responses: Record<string, unknown>;
  readonly requestBody?: Record<string, unknown>;
}

const statusRef = { $ref: "#/components/schemas/google.rpc.Status" };
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: statusRef } },
});
const probeBody = (status: string) => ({
  type: "object",
  properties: { status: { type: "string", const: status } },
  required: ["status"],
});
/**
 * What a probe can answer besides its own status: the HTTP layer refuses a request it cannot read
 * before any route runs. The probes skip the edge (no credential, no rate limit), so nothing else.
 */
const unreadableRequest = {
  "4XX": {
    description:
      "The HTTP layer's refusal of a request it cannot read, before any route: 400 (not HTTP/1.1 or HTTP/2) or 431 (request headers over 16 KiB); no body, and the connection is closed",
  },
};
/** The edge's refusals that reach endpoints past it whatever they are: the rate limit and its store. */
const edgeRefusals = {
  "429": errorResponse("resource_exhausted: rate limit (see Retry-After)"),
  "503": errorResponse("unavailable: the rate limit could not be counted; retry (see Retry-After)"),
};
/** A sign-in refusal: an HTML page for browsers (`Accept: text/html`), else google.rpc.Status. */
const signInFailure = (description: string) => ({
  description,
  content: {
    "text/html": { schema: { type: "string" } },
    "application/json": { schema: statusRef },
  },
});
const setCookie = (description: string) => ({
  "Set-Cookie": { description, schema: { type: "string" } },
});
const continuePage = {
  "200": {
    description:
      "A page naming the identity provider's host and the workspace, with the link that continues the sign-in there (never a redirect); sets the cookie that binds the sign-in to this browser",
    headers: setCookie("The binding cookie, scoped to the callback's path"),
    content: { "text/html": { schema: { type: "string" } } },
  },
};
const signedIn = {
  "303": {
    description:
      "Signed in: the session cookies are set and the browser is sent to the web app (the `returnTo` path of the start); no token is in the URL",
    headers: {
      Location: { description: "The web app's address", schema: { type: "string", format: "uri" } },
      ...setCookie("The session and refresh cookies; the binding cookie cleared"),
    },
  },
};
const signInFailures = {
  "400": signInFailure(
    "invalid_argument or failed_precondition: the request or the sign-in was refused (returnTo, state, binding cookie, signature, audience, expiry...)",
  ),
  "429": signInFailure("resource_exhausted: rate limit (see Retry-After)"),
  default: signInFailure("Any other failure, with its HTTP status"),
};

const plainTagDescriptions: Readonly<Record<string, string>> = {
  Operations: "Probes and this document: no credential, no database except /readyz's check.",
  SSO: "Browser endpoints of single sign-on (OIDC and SAML): a page that continues at the identity provider, then a redirect to the web app.",
  Billing: "The payment provider's webhook.",
};

/** The endpoints that are not RPCs; `plainRoutes` is checked against the server's own table in tests. */
export const plainRoutes: readonly PlainRoute[] = [
  {
    method: "get",
    path: "/healthz",
    tag: "Operations",
    summary: "Liveness: the process answers",
    responses: {
      "200": { description: "Alive", content: { "application/json": { schema: probeBody("ok") } } },
      ...unreadableRequest,
    },
  },
  {
    method: "get",
    path: "/readyz",
    tag: "Operations",
    summary: "Readiness: the database answers",
    responses: {
      "200": { description: "Ready", content: { "application/json": { schema: probeBody("ready") } } },
      "503": {
        description: "The database does not answer",
        content: { "application/json": { schema: probeBody("unavailable") } },
      },
      ...unreadableRequest,
    },
  },
  {
    method: "get",
    path: "/openapi.json",
    tag: "Operations",
    summary: "This document",
    responses: {
      "200": { description: "The OpenAPI document", content: { "application/json": { schema: {} } } },
      ...edgeRefusals,
    },
  },
  {
    method: "get",
    path: "/v1/sso/oidc/:providerId/start",
    tag: "SSO",
    summary: "Starts an OIDC sign-in with the workspace's identity provider",
    responses: { ...continuePage, "404": signInFailure("No such provider"), ...signInFailures },
  },
  {
    method: "get",
    path: "/v1/sso/oidc/callback",
    tag: "SSO",
    summary: "The OIDC redirect URI: finishes the sign-in and sets the session cookie",
    responses: { ...signedIn, ...signInFailures },
  },
  {
    method: "get",
    path: "/v1/sso/saml/:workspaceId/metadata",
    tag: "SSO",
    summary: "The SAML service provider metadata of a workspace",
    responses: {
      "200": {
        description: "SP metadata",
        content: { "application/samlmetadata+xml": { schema: { type: "string" } } },
      },
      "404": errorResponse("No SAML provider"),
    },
  },
  {
    method: "get",
    path: "/v1/sso/saml/:providerId/start",
    tag: "SSO",
    summary: "Starts a SAML sign-in (its link carries the AuthnRequest)",
    responses: { ...continuePage, "404": signInFailure("No such provider"), ...signInFailures },
  },
  {
    method: "post",
    path: "/v1/sso/saml/:workspaceId/acs",
    tag: "SSO",
    summary: "The SAML assertion consumer service: finishes the sign-in and sets the session cookie",
    requestBody: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": {
          schema: {
            type: "object",
            properties: { SAMLResponse: { type: "string" }, RelayState: { type: "string" } },
            required: ["SAMLResponse"],
          },
        },
      },
    },
    responses: { ...signedIn, ...signInFailures },
  },
  {
    method: "post",
    path: "/v1/billing/webhook",
    tag: "Billing",
    summary: "Stripe's webhook (signed with the webhook secret)",
    requestBody: { required: true, content: { "application/json": { schema: { type: "object" } } } },
    responses: {
      "200": {
        description: "Event accepted",
        content: { "application/json": { schema: { type: "object" } } },
      },
      "400": errorResponse("Bad signature or payload"),
    },
  },
  {
    method: "get",
    path: "/v1/crl/:file",
    tag: "CertificateService",
    summary:
      "An X.509 authority's certificate revocation list (DER), named `<authority id>.crl`; no credentials",
    responses: {
      "200": {
        description: "The CRL, signed by the authority",
        content: { "application/pkix-crl": { schema: { type: "string", format: "binary" } } },
      },
      "404": errorResponse("No X.509 authority with that id"),
    },
  },
  {
    method: "get",
    path: "/v1/trust/:caId/:document",
    tag: "CertificateService",
    summary:
      "What an authority asks relying parties to trust, no credentials: `user_ca_keys` (sshd TrustedUserCAKeys lines) and `known_hosts` (`@cert-authority` lines for the patterns of the `hosts` query, `*` by default) for SSH, `bundle.pem` for X.509",
    responses: {
      "200": {
        description: "Every key trusted now, the signer of host certificates first",
        content: {
          "text/plain": { schema: { type: "string" } },
          "application/pem-certificate-chain": { schema: { type: "string" } },
        },
      },
      "400": errorResponse("`hosts` is not a list of known_hosts patterns"),
      "404": errorResponse("No authority of that id and kind"),
    },
  },
];

/** `{workspace_id}` for a template variable, `{name}` for a Hono `:name`; the verb stays. */
export function openApiPath(route: RestRoute): string {
  return route.template.source.replace(/\{([^}=]+)(=[^}]*)?\}/g, "{$1}");
}

/** A Hono path (`/v1/sso/oidc/:providerId/start`) in OpenAPI's form. */
export function openApiPathOfHono(path: string): string {
  return path.replace(/:([A-Za-z_]\w*)/g, "{$1}");
}

export function buildOpenApiDocument(options: OpenApiOptions): Record<string, unknown> {
  const schemas = new SchemaCollector();
  const paths: Record<string, Record<string, Operation>> = {};
  const tags = new Map<string, string>();
  const routes = createRestRoutes(options.services).routes;
  const operationIds = new Map<string, number>();

  for (const route of routes) {
    const path = openApiPath(route);
    const method = route.httpMethod.toLowerCase();
    const procedure = `/${route.method.parent.typeName}/${route.method.name}`;
    tags.set(route.method.parent.name, `The RPCs of ${route.method.parent.typeName}.`);
    const baseId = `${route.method.parent.name}_${route.method.name}`;
    // An additional binding of the same RPC gets an id of its own.
    const seen = operationIds.get(baseId) ?? 0;
    operationIds.set(baseId, seen + 1);
    const operation: Operation = {
      operationId: seen === 0 ? baseId : `${baseId}_${seen + 1}`,
      tags: [route.method.parent.name],
      summary: summaryOf(route.method),
      "x-rpc": procedure,
      parameters: parametersOf(route, schemas),
      ...requestBodyOf(route, schemas),
      responses: responsesOf(route, schemas),
      security: options.publicProcedures.has(procedure) ? [] : [{ bearerAuth: [] }, { sessionCookie: [] }],
    };
    paths[path] ??= {};
    paths[path][method] = operation;
  }
  for (const plain of plainRoutes) {
    const path = openApiPathOfHono(plain.path);
    const variables = [...plain.path.matchAll(/:([A-Za-z_]\w*)/g)].map((m) => m[1]!);
    tags.set(plain.tag, plainTagDescriptions[plain.tag] ?? plain.tag);
    paths[path] ??= {};
    paths[path][plain.method] = {
      operationId:
        `${plain.tag}_${plain.method}_${variables.length > 0 ? "by" : ""}${path.replace(/[^A-Za-z0-9]+/g, "_")}`.replace(
          /_+/g,
          "_",
        ),
      tags: [plain.tag],
      summary: plain.summary,
      parameters: variables.map((name) => ({
        name,
        in: "path",
        required: true,
        schema: { type: "string" },
      })),
      ...(plain.requestBody && { requestBody: plain.requestBody }),
      responses: plain.responses,
      security: [],
    };
  }

  const sortedPaths = Object.fromEntries(
    Object.entries(paths).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return {
    openapi: "3.1.0",
    info: {
      title: "Workspace Access Platform API",
      version: options.version,
      description:
        "The REST form of the platform.v1 contract (transcoded from its google.api.http annotations). Every RPC is also served as Connect, gRPC and gRPC-Web at /platform.v1.<Service>/<Method>.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "/" }],
    tags: [...tags]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, description]) => ({ name, description })),
    paths: sortedPaths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description: "An access token from Login (PASETO v4.public) or a service account token.",
        },
        sessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: "session",
          description:
            "The session cookie set by Login and SSO sign-in, for browsers. State-changing requests must come from an allowed origin.",
        },
      },
      schemas: {
        ...Object.fromEntries(
          Object.entries(schemas.schemas).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        ),
        "google.rpc.Status": {
          type: "object",
          description: "The error body of every REST answer that is not a success.",
          properties: {
            code: { type: "integer", format: "int32", description: "The google.rpc.Code number." },
            message: { type: "string" },
            details: {
              type: "array",
              items: { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] },
            },
          },
          required: ["code", "message", "details"],
        },
      },
    },
  };
}

function parametersOf(route: RestRoute, schemas: SchemaCollector): Record<string, unknown>[] {
  const parameters: Record<string, unknown>[] = [];
  const bound = new Set<string>();
  for (const variable of route.template.variables) {
    bound.add(variable.fieldPath.split(".")[0]!);
    parameters.push({
      name: variable.fieldPath,
      in: "path",
      required: true,
      schema: { type: "string" },
    });
  }
  const body = route.rule.body;
  if (body === "*") return parameters;
  for (const field of route.method.input.fields) {
    if (field.name === body || bound.has(field.name)) continue;
    const schema = schemas.field(field);
    parameters.push({
      name: field.jsonName,
      in: "query",
      required: false,
      // Repeated fields repeat the parameter (`?eventTypes=a&eventTypes=b`).
      ...(field.fieldKind === "list" && { explode: true }),
      schema,
    });
  }
  return parameters;
}

function requestBodyOf(route: RestRoute, schemas: SchemaCollector): Record<string, unknown> {
  const body = route.rule.body;
  if (body === "") return {};
  const schema: JsonSchema =
    body === "*"
      ? schemas.ref(route.method.input)
      : schemas.field(route.method.input.fields.find((f) => f.name === body)!);
  return { requestBody: { required: body !== "*", content: { "application/json": { schema } } } };
}

function responsesOf(route: RestRoute, schemas: SchemaCollector): Record<string, unknown> {
  const output = schemas.ref(route.method.output);
  const success =
    route.method.methodKind === "server_streaming"
      ? {
          description:
            'A stream of messages, one JSON object per line; a stream cut short ends with a line {"error": Status}.',
          content: { "application/x-ndjson": { schema: output } },
        }
      : { description: "Success", content: { "application/json": { schema: output } } };
  return {
    "200": success,
    "400": errorResponse("invalid_argument, failed_precondition or out_of_range"),
    "401": errorResponse("unauthenticated: no valid credential"),
    "403": errorResponse("permission_denied"),
    "404": errorResponse("not_found"),
    "409": errorResponse("already_exists or aborted"),
    "429": errorResponse("resource_exhausted: rate limit (see Retry-After)"),
    "503": errorResponse("unavailable: retry (see Retry-After)"),
    default: errorResponse("Any other error, as a google.rpc.Status"),
  };
}

function summaryOf(method: DescMethod): string {
  return `${method.parent.name}.${method.name}`;
}
