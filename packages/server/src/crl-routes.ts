/**
 * The public CRL of each X.509 certificate authority: `GET /v1/crl/{caId}.crl`, anonymous, DER
 * (`application/pkix-crl`), the URL every leaf names in its CRL distribution point. Relying
 * parties (OpenSSL, TLS libraries, proxies) fetch it without credentials; it says nothing a
 * revoked certificate's holder does not know. Unknown ids and SSH authorities answer 404.
 *
 * @module
 */
import { NotFoundError } from "@wap/core";
import { publicCrl } from "@wap/core/internal";
import { Hono } from "hono";
import type { EdgeSettings } from "./edge.js";
import { admitted, type Env, isUuid } from "./endpoint-edge.js";
import { refusalResponse } from "./error-responses.js";

/** The CRL endpoint, to mount before the REST catch-all. */
export function crlRoutes(settings: { readonly edge: EdgeSettings }): Hono<Env> {
  const app = new Hono<Env>();
  app.get("/v1/crl/:file", async (c) => {
    const { edge, refusal } = admitted(c);
    const fail = (error: unknown) => refusalResponse(edge, error, settings.edge.logger);
    if (refusal) return fail(refusal);
    const caId = /^(.+)\.crl$/.exec(c.req.param("file"))?.[1] ?? "";
    const unknown = new NotFoundError(`no certificate revocation list at ${new URL(c.req.url).pathname}`, {
      reason: "CRL_NOT_FOUND",
    });
    if (!isUuid(caId)) return fail(unknown);
    try {
      const der = await publicCrl(settings.edge.platform.services, caId.toLowerCase());
      if (der === null) return fail(unknown);
      return new Response(der, {
        status: 200,
        headers: { "Content-Type": "application/pkix-crl", "Cache-Control": "public, max-age=300" },
      });
    } catch (error) {
      return fail(error);
    }
  });
  return app;
}
