/**
 * Sealed server secrets (`secrets`), and every sealed value for re-sealing under a new master key.
 *
 * @module
 */
import type { SealedValue, SealedValueRepository, SecretRecord, SecretRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromBytes, fromDate, toBytes, toDate } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { SecretsTable } from "../schema.js";

function rowToSecret(r: Selectable<SecretsTable>): SecretRecord {
  return { name: r.name, sealed: toBytes(r.sealed), createdAt: toDate(r.created_at) };
}

function secretToRow(s: SecretRecord): Insertable<SecretsTable> {
  return { name: s.name, sealed: fromBytes(s.sealed), created_at: fromDate(s.createdAt) };
}

export function createSecretRepository(run: QueryRunner): SecretRepository {
  return {
    async find(name) {
      const row = await run.read((db) =>
        db.selectFrom("secrets").selectAll().where("name", "=", name).executeTakeFirst(),
      );
      return row ? rowToSecret(row) : null;
    },
    async insertIfAbsent(secret) {
      // Losers of a race insert nothing and read the winner's row.
      const row = await run.write(async (db) => {
        await db
          .insertInto("secrets")
          .values(secretToRow(secret))
          .onConflict((oc) => oc.column("name").doNothing())
          .execute();
        return db.selectFrom("secrets").selectAll().where("name", "=", secret.name).executeTakeFirstOrThrow();
      });
      return rowToSecret(row);
    },
  };
}

export function createSealedValueRepository(run: QueryRunner): SealedValueRepository {
  return {
    async listAll() {
      const [authorities, secrets, providers, auditKeys, webhookSecrets] = await run.read((db) =>
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
          db
            .selectFrom("audit_signing_keys")
            .select(["workspace_id", "sealed_private_key"])
            .orderBy("workspace_id")
            .execute(),
          db
            .selectFrom("webhook_secrets")
            .select(["endpoint_id", "version", "sealed"])
            .orderBy("endpoint_id")
            .orderBy("version")
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
      for (const row of auditKeys) {
        values.push({
          ref: { kind: "audit_key", workspaceId: row.workspace_id },
          sealed: toBytes(row.sealed_private_key),
        });
      }
      for (const row of webhookSecrets) {
        values.push({
          ref: { kind: "webhook_secret", endpointId: row.endpoint_id, version: row.version },
          sealed: toBytes(row.sealed),
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
          case "audit_key":
            return db
              .updateTable("audit_signing_keys")
              .set({ sealed_private_key: bytes })
              .where("workspace_id", "=", ref.workspaceId)
              .executeTakeFirst();
          case "webhook_secret":
            return db
              .updateTable("webhook_secrets")
              .set({ sealed: bytes })
              .where("endpoint_id", "=", ref.endpointId)
              .where("version", "=", ref.version)
              .executeTakeFirst();
        }
      });
      return Number(result.numUpdatedRows) > 0;
    },
  };
}
