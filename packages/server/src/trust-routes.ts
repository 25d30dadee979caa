/**
 * What each certificate authority asks relying parties to trust, anonymous and in the exact form
 * each one reads (core `publishedTrust`): `GET /v1/trust/{caId}/user_ca_keys` (sshd's
 * TrustedUserCAKeys lines), `/v1/trust/{caId}/known_hosts` (`@cert-authority` lines, for the
 * host patterns given as `?hosts=`, `*` otherwise) and `/v1/trust/{caId}/bundle.pem` (an X.509
 * authority's CA certificates). Public keys and CA certificates only, nothing secret; unknown
 * ids, and documents of the other kind of authority, answer 404.
 *
 * @module
 */
import { NotFoundError } from "@wap/core";
import { publishedTrust, type TrustDocument, trustDocuments } from "@wap/core/internal";
import { Hono } from "hono";
import type { EdgeSettings } from "./edge.js";
import { admitted, type Env, isUuid } from "./endpoint-edge.js";
import { refusalResponse } from "./error-responses.js";

/** The trust endpoints, to mount before the REST catch-all. */
export function trustRoutes(settings: { readonly edge: EdgeSettings }): Hono<Env> {
  const app = new Hono<Env>();
  app.get("/v1/trust/:caId/:document", async (c) => {
    const { edge, refusal } = admitted(c);
    const fail = (error: unknown) => refusalResponse(edge, error, settings.edge.logger);
    if (refusal) return fail(refusal);
    const caId = c.req.param("caId");
    const document = c.req.param("document");
    const unknown = new NotFoundError(`nothing is published at ${new URL(c.req.url).pathname}`, {
      reason: "TRUST_NOT_FOUND",
    });
    if (!isUuid(caId) || !(trustDocuments as readonly string[]).includes(document)) return fail(unknown);
    try {
      const published = await publishedTrust(
        settings.edge.platform.services,
        caId.toLowerCase(),
        document as TrustDocument,
        { hosts: c.req.query("hosts") },
      );
      if (published === null) return fail(unknown);
      return new Response(published.body, {
        status: 200,
        headers: { "Content-Type": published.contentType, "Cache-Control": "public, max-age=300" },
      });
    } catch (error) {
      return fail(error);
    }
  });
  return app;
}
