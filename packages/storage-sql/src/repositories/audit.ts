/**
 * The audit log (`audit_events`): appended, listed in pages, and counted and scanned in keyset
 * pages for the export.
 *
 * @module
 */
import {
  type AuditCheckpointRecord,
  type AuditCheckpointRepository,
  type AuditEventFilter,
  type AuditEventRecord,
  type AuditEventRepository,
  type AuditSigningKeyRecord,
  auditEntryContent,
  type ChainedAuditEventRecord,
  genesisHash,
} from "@wap/core/storage";
import {
  type CompiledQuery,
  type Expression,
  type ExpressionBuilder,
  type Insertable,
  type Kysely,
  type RawBuilder,
  type Selectable,
  type SqlBool,
  sql,
} from "kysely";
import type { SqlDialectName, SqlDialectTraits } from "../dialect.js";
import { fromBytes, fromDate, likeContains, toBytes, toDate, toNumber } from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import { prepare, prepareInsert } from "../lib/prepared.js";
import type { QueryRunner } from "../repositories.js";
import type { AuditCheckpointsTable, AuditEventsTable, Database } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
export const insertAuditEvent = prepareInsert("audit_events");

// --- the hash chain --------------------------------------------------------------------------
//
// An entry of a workspace joins its chain in two steps, run in the transaction that commits it:
// the first moves the workspace's head one position on (an upsert of one row: on PostgreSQL its
// row lock makes the writers of a workspace take turns until they commit, across instances), the
// second inserts the entry with the head's position and hashes (on PostgreSQL both are one
// statement). `wap_chain_hash(previous, position, content)` is SHA-256 over the three (a
// PostgreSQL function from the migration; a function each SQLite connection registers), `content`
// the entry's bytes from audit/chain.ts.

const genesis = fromBytes(genesisHash);

/** A raw statement as `prepare` takes it. */
const statement = (db: Kysely<Database>, raw: RawBuilder<unknown>) => ({ compile: () => raw.compile(db) });

const advanceChainHead = prepare((db, workspaceId: string, start: Uint8Array, content: Uint8Array) =>
  statement(
    db,
    sql`insert into "audit_chain_heads" ("workspace_id", "position", "previous_hash", "hash")
    values (${workspaceId}, 1, ${start}, wap_chain_hash(${start}, 1, ${content}))
    on conflict ("workspace_id") do update set
      "position" = "audit_chain_heads"."position" + 1,
      "previous_hash" = "audit_chain_heads"."hash",
      "hash" = wap_chain_hash("audit_chain_heads"."hash", "audit_chain_heads"."position" + 1, ${content})`,
  ),
);

const lockChainHead = prepare((db, workspaceId: string, start: Uint8Array) =>
  statement(
    db,
    sql`insert into "audit_chain_heads" ("workspace_id", "position", "previous_hash", "hash")
    values (${workspaceId}, 0, ${start}, ${start})
    on conflict ("workspace_id") do update set "position" = "audit_chain_heads"."position"`,
  ),
);

/**
 * Statements that lock the heads of `workspaceIds` (making the missing ones), in one order for
 * every writer: a batch whose units touch several chains takes them all first, so that two
 * instances' batches never wait on each other in a circle.
 */
export function lockChainHeadStatements(
  db: Kysely<Database>,
  dialect: SqlDialectName,
  workspaceIds: Iterable<string>,
): CompiledQuery[] {
  return [...new Set(workspaceIds)].sort().map((id) => lockChainHead.compile(db, dialect, id, genesis));
}

const insertChainedEvent = prepare(
  (
    db,
    id: string,
    workspaceId: string,
    actorId: string,
    actorType: string,
    action: string,
    resource: string,
    ipAddress: string,
    userAgent: string,
    statusCode: string,
    requestId: string,
    occurredAt: number,
  ) =>
    statement(
      db,
      sql`insert into "audit_events" ("id", "workspace_id", "actor_id", "actor_type", "action", "resource",
      "ip_address", "user_agent", "status_code", "request_id", "occurred_at", "chain_position", "previous_hash", "hash")
    select ${id}, "workspace_id", ${actorId}, ${actorType}, ${action}, ${resource}, ${ipAddress}, ${userAgent},
      ${statusCode}, ${requestId}, cast(${occurredAt} as bigint), "position", "previous_hash", "hash"
    from "audit_chain_heads" where "workspace_id" = ${workspaceId}`,
    ),
);

/** PostgreSQL runs both steps as one statement (one round trip): the head's upsert feeds the insert. */
const appendChainedEvent = prepare(
  (
    db,
    workspaceId: string,
    start: Uint8Array,
    content: Uint8Array,
    id: string,
    actorId: string,
    actorType: string,
    action: string,
    resource: string,
    ipAddress: string,
    userAgent: string,
    statusCode: string,
    requestId: string,
    occurredAt: number,
  ) =>
    statement(
      db,
      sql`with "head" as (
      insert into "audit_chain_heads" ("workspace_id", "position", "previous_hash", "hash")
      values (${workspaceId}, 1, ${start}, wap_chain_hash(${start}, 1, ${content}))
      on conflict ("workspace_id") do update set
        "position" = "audit_chain_heads"."position" + 1,
        "previous_hash" = "audit_chain_heads"."hash",
        "hash" = wap_chain_hash("audit_chain_heads"."hash", "audit_chain_heads"."position" + 1, ${content})
      returning "workspace_id", "position", "previous_hash", "hash")
    insert into "audit_events" ("id", "workspace_id", "actor_id", "actor_type", "action", "resource",
      "ip_address", "user_agent", "status_code", "request_id", "occurred_at", "chain_position", "previous_hash", "hash")
    select ${id}, "workspace_id", ${actorId}, ${actorType}, ${action}, ${resource}, ${ipAddress}, ${userAgent},
      ${statusCode}, ${requestId}, cast(${occurredAt} as bigint), "position", "previous_hash", "hash" from "head"`,
    ),
);

/**
 * The statements that append `event`: chained when it belongs to a workspace (to run together,
 * in one transaction), a plain insert otherwise.
 */
export function auditEventStatements(
  db: Kysely<Database>,
  dialect: SqlDialectName,
  event: AuditEventRecord,
): CompiledQuery[] {
  if (event.workspaceId === null) return [insertAuditEvent.compile(db, dialect, auditEventToRow(event))];
  const content = fromBytes(auditEntryContent(event));
  if (dialect === "postgres") {
    return [
      appendChainedEvent.compile(
        db,
        dialect,
        event.workspaceId,
        genesis,
        content,
        event.id,
        event.actorId,
        event.actorType,
        event.action,
        event.resource,
        event.ipAddress,
        event.userAgent,
        event.statusCode,
        event.requestId,
        fromDate(event.timestamp),
      ),
    ];
  }
  return [
    advanceChainHead.compile(db, dialect, event.workspaceId, genesis, content),
    insertChainedEvent.compile(
      db,
      dialect,
      event.id,
      event.workspaceId,
      event.actorId,
      event.actorType,
      event.action,
      event.resource,
      event.ipAddress,
      event.userAgent,
      event.statusCode,
      event.requestId,
      fromDate(event.timestamp),
    ),
  ];
}

export function auditEventToRow(e: AuditEventRecord): Insertable<AuditEventsTable> {
  return {
    id: e.id,
    workspace_id: e.workspaceId,
    actor_id: e.actorId,
    actor_type: e.actorType,
    action: e.action,
    resource: e.resource,
    ip_address: e.ipAddress,
    user_agent: e.userAgent,
    status_code: e.statusCode,
    request_id: e.requestId,
    occurred_at: fromDate(e.timestamp),
  };
}

function rowToAuditEvent(r: Selectable<AuditEventsTable>): AuditEventRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    actorId: r.actor_id,
    actorType: r.actor_type,
    action: r.action,
    resource: r.resource,
    ipAddress: r.ip_address,
    userAgent: r.user_agent,
    statusCode: r.status_code,
    requestId: r.request_id,
    timestamp: toDate(r.occurred_at),
  };
}

function rowToChainedEvent(r: Selectable<AuditEventsTable>): ChainedAuditEventRecord {
  if (r.workspace_id === null || r.chain_position === null || r.previous_hash === null || r.hash === null) {
    throw new Error(`audit event ${r.id} is not chained`);
  }
  return {
    ...rowToAuditEvent(r),
    workspaceId: r.workspace_id,
    position: toNumber(r.chain_position),
    previousHash: toBytes(r.previous_hash),
    hash: toBytes(r.hash),
  };
}

function decodeCursor(cursor: string): { occurredAt: number; seq: number } {
  const match = /^(-?\d{1,16}):(\d{1,19})$/.exec(cursor);
  if (!match) throw new RangeError(`not an audit scan cursor: ${cursor}`);
  return { occurredAt: toNumber(match[1]!), seq: toNumber(match[2]!) };
}

/** `<occurred_at>:<seq>` of the last row of a page. */
function encodeCursor(occurredAt: number, seq: number): string {
  return `${occurredAt}:${seq}`;
}

/**
 * The rows of a workspace's audit log that `filter` selects. `since` is inclusive and `until`
 * exclusive, so consecutive windows never overlap; list filters match any of their values.
 */
function auditFilter(
  workspaceId: string,
  filter: Omit<AuditEventFilter, "limit" | "offset">,
  dialect: SqlDialectName,
) {
  return (eb: ExpressionBuilder<Database, "audit_events">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.since !== undefined) conditions.push(eb("occurred_at", ">=", fromDate(filter.since)));
    if (filter.until !== undefined) conditions.push(eb("occurred_at", "<", fromDate(filter.until)));
    if (filter.action) conditions.push(eb("action", "=", filter.action));
    if (filter.actorId) conditions.push(eb("actor_id", "=", filter.actorId));
    if (filter.actions?.length) conditions.push(eb("action", "in", [...filter.actions]));
    if (filter.actorIds?.length) conditions.push(eb("actor_id", "in", [...filter.actorIds]));
    if (filter.actorTypes?.length) conditions.push(eb("actor_type", "in", [...filter.actorTypes]));
    if (filter.resources?.length) conditions.push(eb("resource", "in", [...filter.resources]));
    if (filter.search) {
      const pattern = likeContains(asciiLower(filter.search));
      conditions.push(
        eb.or(
          searchedColumns.map(
            (column) => sql<SqlBool>`${asciiLowerColumn(dialect, column)} like ${pattern} escape '!'`,
          ),
        ),
      );
    }
    return eb.and(conditions);
  };
}

function asciiLowerColumn(dialect: SqlDialectName, column: string) {
  // PostgreSQL folds every letter unless the collation is "C", where only ASCII letters fold.
  return dialect === "postgres" ? sql`lower(${sql.ref(column)} collate "C")` : sql`lower(${sql.ref(column)})`;
}

const searchedColumns = ["action", "resource", "actor_id", "actor_type", "ip_address", "user_agent"] as const;

/** Lower-cases ASCII letters only, the same on every engine (SQLite's lower() does just that). */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function createAuditEventRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): AuditEventRepository {
  return {
    async append(event) {
      if (event.workspaceId === null) {
        await run.write((db) => insertAuditEvent.execute(run, db, dialect.name, auditEventToRow(event)));
        return;
      }
      // Chained as the transaction commits, so the head is held only for the commit itself.
      await run.atCommit(event.workspaceId, async (db) => {
        for (const statement of auditEventStatements(db, dialect.name, event))
          await run.execute(db, statement);
      });
    },
    async list(workspaceId, filter) {
      const where = auditFilter(workspaceId, filter, dialect.name);
      const page = await run.read((db) =>
        listPage(
          db.selectFrom("audit_events").where(where),
          (q) => q.selectAll().orderBy("occurred_at", "desc").orderBy("seq", "desc"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToAuditEvent), total: page.total };
    },
    async count(workspaceId, window) {
      const row = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .where(auditFilter(workspaceId, window, dialect.name))
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow(),
      );
      return toNumber(row.n);
    },
    async scan(workspaceId, request) {
      const after = request.after === undefined ? undefined : decodeCursor(request.after);
      const rows = await run.read((db) => {
        let query = db
          .selectFrom("audit_events")
          .selectAll()
          .where(auditFilter(workspaceId, request, dialect.name))
          .orderBy("occurred_at")
          .orderBy("seq")
          .limit(request.limit);
        if (after !== undefined) {
          query = query.where((eb) =>
            eb(eb.refTuple("occurred_at", "seq"), ">", eb.tuple(after.occurredAt, after.seq)),
          );
        }
        return query.execute();
      });
      const last = rows[rows.length - 1];
      return {
        items: rows.map(rowToAuditEvent),
        next:
          last === undefined || rows.length < request.limit
            ? null
            : encodeCursor(toNumber(last.occurred_at), toNumber(last.seq)),
      };
    },
    async chainHead(workspaceId) {
      const row = await run.read((db) =>
        db
          .selectFrom("audit_chain_heads")
          .select(["position", "hash"])
          .where("workspace_id", "=", workspaceId)
          .where("position", ">", 0)
          .executeTakeFirst(),
      );
      return row === undefined ? null : { position: toNumber(row.position), hash: toBytes(row.hash) };
    },
    async chainRange(workspaceId, window) {
      const where = auditFilter(workspaceId, window, dialect.name);
      const row = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .where(where)
          .where("chain_position", "is not", null)
          .select((eb) => [eb.fn.min("chain_position").as("first"), eb.fn.max("chain_position").as("last")])
          .executeTakeFirst(),
      );
      if (row?.first == null || row.last == null) return null;
      return { first: toNumber(row.first), last: toNumber(row.last) };
    },
    async scanChain(workspaceId, request) {
      const rows = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("chain_position", ">=", request.from)
          .where("chain_position", "<=", request.to)
          .orderBy("chain_position")
          .limit(request.limit)
          .execute(),
      );
      return rows.map(rowToChainedEvent);
    },
    async chainHashAt(workspaceId, position) {
      if (position === 0) return genesisHash.slice();
      const row = await run.read((db) =>
        db
          .selectFrom("audit_events")
          .select("hash")
          .where("workspace_id", "=", workspaceId)
          .where("chain_position", "=", position)
          .executeTakeFirst(),
      );
      return row?.hash == null ? null : toBytes(row.hash);
    },
  };
}

function rowToCheckpoint(r: Selectable<AuditCheckpointsTable>): AuditCheckpointRecord {
  return {
    workspaceId: r.workspace_id,
    position: toNumber(r.position),
    hash: toBytes(r.hash),
    signedAt: toDate(r.signed_at),
    signature: toBytes(r.signature),
  };
}

export function createAuditCheckpointRepository(run: QueryRunner): AuditCheckpointRepository {
  const findKey = async (workspaceId: string): Promise<AuditSigningKeyRecord | null> => {
    const row = await run.read((db) =>
      db
        .selectFrom("audit_signing_keys")
        .selectAll()
        .where("workspace_id", "=", workspaceId)
        .executeTakeFirst(),
    );
    return row === undefined
      ? null
      : {
          workspaceId: row.workspace_id,
          publicKey: toBytes(row.public_key),
          sealedPrivateKey: toBytes(row.sealed_private_key),
          createdAt: toDate(row.created_at),
        };
  };
  return {
    findKey,
    async insertKeyIfAbsent(key) {
      await run.write((db) =>
        db
          .insertInto("audit_signing_keys")
          .values({
            workspace_id: key.workspaceId,
            public_key: fromBytes(key.publicKey),
            sealed_private_key: fromBytes(key.sealedPrivateKey),
            created_at: fromDate(key.createdAt),
          })
          .onConflict((oc) => oc.column("workspace_id").doNothing())
          .execute(),
      );
      const stored = await findKey(key.workspaceId);
      if (stored === null) throw new Error(`audit signing key of ${key.workspaceId} vanished`);
      return stored;
    },
    async add(checkpoint) {
      await run.write((db) =>
        db
          .insertInto("audit_checkpoints")
          .values({
            workspace_id: checkpoint.workspaceId,
            position: checkpoint.position,
            hash: fromBytes(checkpoint.hash),
            signed_at: fromDate(checkpoint.signedAt),
            signature: fromBytes(checkpoint.signature),
          })
          .onConflict((oc) => oc.columns(["workspace_id", "position", "signed_at"]).doNothing())
          .execute(),
      );
    },
    async latest(workspaceId) {
      const row = await run.read((db) =>
        db
          .selectFrom("audit_checkpoints")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .orderBy("position", "desc")
          .orderBy("signed_at", "desc")
          .limit(1)
          .executeTakeFirst(),
      );
      return row === undefined ? null : rowToCheckpoint(row);
    },
    async unsignedHeads(limit) {
      const rows = await run.read((db) =>
        db
          .selectFrom("audit_chain_heads as h")
          .select(["h.workspace_id", "h.position", "h.hash"])
          .where("h.position", ">", 0)
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom("audit_checkpoints as c")
                  .select("c.position")
                  .whereRef("c.workspace_id", "=", "h.workspace_id")
                  .whereRef("c.position", ">=", "h.position"),
              ),
            ),
          )
          .orderBy("h.workspace_id")
          .limit(limit)
          .execute(),
      );
      return rows.map((r) => ({
        workspaceId: r.workspace_id,
        position: toNumber(r.position),
        hash: toBytes(r.hash),
      }));
    },
    async list(workspaceId, range, limit) {
      const rows = await run.read((db) =>
        db
          .selectFrom("audit_checkpoints")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("position", ">=", range.first)
          .where("position", "<=", range.last)
          .orderBy("position")
          .orderBy("signed_at")
          .limit(limit)
          .execute(),
      );
      return rows.map(rowToCheckpoint);
    },
  };
}
