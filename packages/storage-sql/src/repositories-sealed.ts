/**
 * The sealed values of every workspace, for re-sealing them under a new master key: CA private
 * keys (software ones; a PKCS#11 authority's key never leaves its token), server secrets and OIDC
 * client secrets.
 *
 * @module
 */
import type { SealedValue, SealedValueRepository } from "@wap/core/storage";
import { fromBytes, toBytes } from "./lib/mapping.js";
import type { QueryRunner } from "./repositories.js";

export function createSealedValueRepository(run: QueryRunner): SealedValueRepository {
  return {
    async listAll() {
      const [authorities, secrets, providers] = await run.read((db) =>
        Promise.all([
          db
            .selectFrom("certificate_authorities")
            .select(["id", "key_version", "sealed_private_key"])
            // A PKCS#11 authority's column holds the URI of its key in the token: nothing sealed.
            .where("key_storage", "=", "software")
            .orderBy("id")
            .execute(),
          db.selectFrom("secrets").select(["name", "sealed"]).orderBy("name").execute(),
          db
            .selectFrom("oidc_providers")
            .select(["id", "workspace_id", "sealed_client_secret"])
            .where("sealed_client_secret", "is not", null)
            .orderBy("id")
            .execute(),
        ]),
      );
      const values: SealedValue[] = [];
      for (const row of authorities) {
        values.push({
          ref: { kind: "ca_key", caId: row.id, keyVersion: Number(row.key_version) },
          sealed: toBytes(row.sealed_private_key),
        });
      }
      for (const row of secrets)
        values.push({ ref: { kind: "secret", name: row.name }, sealed: toBytes(row.sealed) });
      for (const row of providers) {
        values.push({
          ref: { kind: "oidc_client_secret", providerId: row.id, workspaceId: row.workspace_id },
          sealed: toBytes(row.sealed_client_secret!),
        });
      }
      return values;
    },

    async replace(ref, sealed) {
      const bytes = fromBytes(sealed);
      const result = await run.write((db) => {
        switch (ref.kind) {
          case "ca_key":
            return db
              .updateTable("certificate_authorities")
              .set({ sealed_private_key: bytes })
              .where("id", "=", ref.caId)
              .where("key_version", "=", ref.keyVersion)
              .executeTakeFirst();
          case "secret":
            return db
              .updateTable("secrets")
              .set({ sealed: bytes })
              .where("name", "=", ref.name)
              .executeTakeFirst();
          case "oidc_client_secret":
            return db
              .updateTable("oidc_providers")
              .set({ sealed_client_secret: bytes })
              .where("id", "=", ref.providerId)
              .where("workspace_id", "=", ref.workspaceId)
              .executeTakeFirst();
        }
      });
      return Number(result.numUpdatedRows) > 0;
    },
  };
}
