/**
 * Nonces of signed requests (`request_nonces`).
 *
 * @module
 */
import type { RequestNonceRepository } from "@wap/core/storage";
import { fromDate } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";

export function createRequestNonceRepository(run: QueryRunner): RequestNonceRepository {
  return {
    async claim(signer, nonce, expiresAt, at) {
      const inserted = await run.write(async (db) => {
        await db.deleteFrom("request_nonces").where("expires_at", "<", fromDate(at)).execute();
        return db
          .insertInto("request_nonces")
          .values({ signer, nonce, expires_at: fromDate(expiresAt) })
          .onConflict((oc) => oc.columns(["signer", "nonce"]).doNothing())
          .executeTakeFirst();
      });
      return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
  };
}
