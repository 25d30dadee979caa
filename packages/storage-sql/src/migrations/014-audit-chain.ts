/**
 * 014_audit_chain: the hash chain of each workspace's audit log, its signed checkpoints and the
 * workspace keys that sign them. Each chained entry gets its position and hashes; the head of
 * each chain is one row, which writers update one at a time. Entries already in the log are
 * chained here in the order they were appended. Frozen once released.
 *
 * @module
 */
import { auditEntryContent, chainHash, genesisHash } from "@wap/core/storage";
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer", bytes: "blob" },
  postgres: { bigint: "bigint", bytes: "bytea" },
} as const;

type Table = CreateTableBuilder<string, string>;

interface ExistingRow {
  seq: number | string;
  id: string;
  workspace_id: string;
  actor_id: string;
  actor_type: string;
  action: string;
  resource: string;
  ip_address: string;
  user_agent: string;
  status_code: string;
  request_id: string;
  occurred_at: number | string;
}

export function auditChainMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const workspaceId = (table: Table) =>
    table.addColumn("workspace_id", "text", (col) =>
      col.notNull().references("workspaces.id").onDelete("cascade"),
    );
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("audit_events").addColumn("chain_position", t.bigint).execute();
      await db.schema.alterTable("audit_events").addColumn("previous_hash", t.bytes).execute();
      await db.schema.alterTable("audit_events").addColumn("hash", t.bytes).execute();
      // One entry per position: two writers can never both take the same place in a chain.
      await db.schema
        .createIndex("audit_events_chain_key")
        .on("audit_events")
        .columns(["workspace_id", "chain_position"])
        .unique()
        .execute();

      let heads: Table = db.schema.createTable("audit_chain_heads");
      heads = workspaceId(heads).addPrimaryKeyConstraint("audit_chain_heads_pkey", ["workspace_id"]);
      heads = heads.addColumn("position", t.bigint, (col) => col.notNull());
      heads = heads.addColumn("previous_hash", t.bytes, (col) => col.notNull());
      heads = heads.addColumn("hash", t.bytes, (col) => col.notNull());
      await heads.execute();

      let keys: Table = db.schema.createTable("audit_signing_keys");
      keys = workspaceId(keys).addPrimaryKeyConstraint("audit_signing_keys_pkey", ["workspace_id"]);
      keys = keys.addColumn("public_key", t.bytes, (col) => col.notNull());
      keys = keys.addColumn("sealed_private_key", t.bytes, (col) => col.notNull());
      keys = keys.addColumn("created_at", t.bigint, (col) => col.notNull());
      await keys.execute();

      let checkpoints: Table = db.schema.createTable("audit_checkpoints");
      checkpoints = workspaceId(checkpoints);
      checkpoints = checkpoints.addColumn("position", t.bigint, (col) => col.notNull());
      checkpoints = checkpoints.addColumn("hash", t.bytes, (col) => col.notNull());
      checkpoints = checkpoints.addColumn("signed_at", t.bigint, (col) => col.notNull());
      checkpoints = checkpoints.addColumn("signature", t.bytes, (col) => col.notNull());
      checkpoints = checkpoints.addPrimaryKeyConstraint("audit_checkpoints_pkey", [
        "workspace_id",
        "position",
        "signed_at",
      ]);
      await checkpoints.execute();

      if (dialect === "postgres") {
        // SQLite has the same function, registered on each connection by the adapter.
        await sql`create function wap_chain_hash(previous bytea, entry_position bigint, content bytea) returns bytea
          language sql immutable strict parallel safe
          as 'select sha256(previous || int8send(entry_position) || content)'`.execute(db);
      }
      await chainExisting(db, dialect);
    },
  };
}

const bytes = (value: Uint8Array) => Buffer.from(value.buffer, value.byteOffset, value.byteLength);

/** Chains the entries already logged, workspace by workspace, in the order they were appended. */
async function chainExisting(db: Kysely<unknown>, dialect: SqlDialectName): Promise<void> {
  const { rows: workspaces } = await sql<{ workspace_id: string }>`
    select distinct workspace_id from audit_events where workspace_id is not null`.execute(db);
  for (const { workspace_id: workspaceId } of workspaces) {
    let previous = genesisHash;
    let before = genesisHash;
    let position = 0;
    let after: number | string = -1;
    for (;;) {
      const { rows } = await sql<ExistingRow>`
        select * from audit_events where workspace_id = ${workspaceId} and seq > ${after}
        order by seq limit 1000`.execute(db);
      if (rows.length === 0) break;
      const links: Link[] = [];
      for (const row of rows) {
        position += 1;
        const hash = chainHash(
          previous,
          position,
          auditEntryContent({
            id: row.id,
            workspaceId,
            actorId: row.actor_id,
            actorType: row.actor_type,
            action: row.action,
            resource: row.resource,
            ipAddress: row.ip_address,
            userAgent: row.user_agent,
            statusCode: row.status_code,
            requestId: row.request_id,
            timestamp: new Date(Number(row.occurred_at)),
          }),
        );
        links.push({ seq: row.seq, position, previous, hash });
        before = previous;
        previous = hash;
        after = row.seq;
      }
      await writeLinks(db, dialect, links);
    }
    await sql`insert into audit_chain_heads (workspace_id, position, previous_hash, hash)
      values (${workspaceId}, ${position}, ${bytes(before)}, ${bytes(previous)})`.execute(db);
  }
}

interface Link {
  readonly seq: number | string;
  readonly position: number;
  readonly previous: Uint8Array;
  readonly hash: Uint8Array;
}

/** One statement per page on PostgreSQL (a round trip per row would take long on a large log). */
async function writeLinks(
  db: Kysely<unknown>,
  dialect: SqlDialectName,
  links: readonly Link[],
): Promise<void> {
  if (dialect === "postgres") {
    await sql`update audit_events as a
      set chain_position = v.position, previous_hash = v.previous, hash = v.hash
      from (select unnest(${links.map((l) => String(l.seq))}::bigint[]) as seq,
                   unnest(${links.map((l) => l.position)}::bigint[]) as position,
                   unnest(${links.map((l) => bytes(l.previous))}::bytea[]) as previous,
                   unnest(${links.map((l) => bytes(l.hash))}::bytea[]) as hash) as v
      where a.seq = v.seq`.execute(db);
    return;
  }
  for (const l of links) {
    await sql`update audit_events set chain_position = ${l.position}, previous_hash = ${bytes(l.previous)},
      hash = ${bytes(l.hash)} where seq = ${l.seq}`.execute(db);
  }
}
