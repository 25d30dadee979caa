/**
 * The schema's history as an ordered list of migrations, applied by Kysely's Migrator.
 *
 * @module
 */
import {
  type DatabaseIntrospector,
  type Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  sql,
  type TableMetadata,
} from "kysely";
import type { SqlDialectName } from "../dialect.js";
import { initialMigration } from "./001-initial.js";
import { certificatesMigration } from "./002-certificates.js";
import { accountsMigration } from "./003-accounts.js";
import { workspaceAccessMigration } from "./004-workspace-access.js";
import { ssoBillingMigration } from "./005-sso-billing.js";
import { daemonsMigration } from "./006-daemons.js";
import { instancesMigration } from "./007-instances.js";
import { sessionRelayMigration } from "./008-session-relay.js";
import { recordingsMigration } from "./009-recordings.js";
import { certificateLifecycleMigration } from "./010-certificate-lifecycle.js";
import { accountSecurityMigration } from "./011-account-security.js";
import { wholeSecondDurationsMigration } from "./012-whole-second-durations.js";
import { reportedEndpointsMigration } from "./013-reported-endpoints.js";
import { auditChainMigration } from "./014-audit-chain.js";
import { grantKindsMigration } from "./015-grant-kinds.js";
import { accessRequestsMigration } from "./016-access-requests.js";
import { sshSessionsMigration } from "./017-ssh-sessions.js";
import { grantLimitsMigration } from "./018-grant-limits.js";
import { webhooksMigration } from "./019-webhooks.js";
import { sshStepUpsMigration } from "./020-ssh-step-ups.js";

/** Our own bookkeeping tables, so an application's Kysely migrations in the same schema never collide. */
export const migrationTableName = "wap_schema_migration";
export const migrationLockTableName = "wap_schema_migration_lock";

/** Every migration this code knows, keyed by name; names sort in the order they apply. */
export function createMigrations(dialect: SqlDialectName): Record<string, Migration> {
  return {
    "001_initial": initialMigration(dialect),
    "002_certificates": certificatesMigration(dialect),
    "003_accounts": accountsMigration(dialect),
    "004_workspace_access": workspaceAccessMigration(dialect),
    "005_sso_billing": ssoBillingMigration(dialect),
    "006_daemons": daemonsMigration(dialect),
    "007_instances": instancesMigration(dialect),
    "008_session_relay": sessionRelayMigration(dialect),
    "009_recordings": recordingsMigration(dialect),
    "010_certificate_lifecycle": certificateLifecycleMigration(dialect),
    "011_account_security": accountSecurityMigration(dialect),
    "012_whole_second_durations": wholeSecondDurationsMigration(dialect),
    "013_reported_endpoints": reportedEndpointsMigration(),
    "014_audit_chain": auditChainMigration(dialect),
    "015_grant_kinds": grantKindsMigration(dialect),
    "016_access_requests": accessRequestsMigration(dialect),
    "017_ssh_sessions": sshSessionsMigration(dialect),
    "018_grant_limits": grantLimitsMigration(),
    "019_webhooks": webhooksMigration(dialect),
    "020_ssh_step_ups": sshStepUpsMigration(dialect),
  };
}

/** The database was migrated by a newer release than this one (or by something else entirely). */
export class SchemaVersionError extends Error {
  /** Migrations recorded in the database that this code does not know. */
  readonly unknownMigrations: readonly string[];
  constructor(unknownMigrations: readonly string[], latestKnown: string) {
    super(
      `the database schema is newer than this version of the Workspace Access Platform: it has ` +
        `migration(s) ${unknownMigrations.join(", ")}, and the latest this version knows is ` +
        `${latestKnown}. Upgrade the server (downgrades are not supported).`,
    );
    this.name = "SchemaVersionError";
    this.unknownMigrations = unknownMigrations;
  }
}

export interface MigrateOptions {
  /** The schema holding the migration tables (pg); default: the connection's current schema. */
  readonly schema?: string;
}

/**
 * Applies every pending migration. Throws {@link SchemaVersionError} when the database holds
 * migrations this code does not know, before touching anything.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  dialect: SqlDialectName,
  options: MigrateOptions = {},
): Promise<{ readonly applied: readonly string[] }> {
  const migrations = createMigrations(dialect);
  const known = Object.keys(migrations).sort();
  const latest = known[known.length - 1] ?? "(none)";

  const executed = await executedMigrations(db, options.schema);
  const unknown = executed.filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new SchemaVersionError(unknown, latest);

  const provider: MigrationProvider = { getMigrations: async () => migrations };
  const migrator = new Migrator({
    db: options.schema === undefined ? db : withIntrospectionOf(db, options.schema),
    provider,
    migrationTableName,
    migrationLockTableName,
    ...(options.schema === undefined ? {} : { migrationTableSchema: options.schema }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    // A newer instance may have migrated between our check and the Migrator's.
    const again = await executedMigrations(db, options.schema).catch(() => []);
    const unknownNow = again.filter((name) => !known.includes(name));
    if (unknownNow.length > 0) throw new SchemaVersionError(unknownNow, latest);
    throw error;
  }
  return {
    applied: (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName),
  };
}

/**
 * `db` whose introspection sees only `schema`. Kysely's Migrator looks for its tables by listing
 * every table of the database; on PostgreSQL that query fails when another schema is dropped
 * while it runs (another installation in the same database), and it reads far more than ours.
 */
function withIntrospectionOf(db: Kysely<unknown>, schema: string): Kysely<unknown> {
  const tables = async (): Promise<TableMetadata[]> => {
    const rows = await sql<{ name: string }>`
      select table_name as name from information_schema.tables where table_schema = ${schema}`.execute(db);
    return rows.rows.map((row) => ({ name: row.name, schema, isView: false, columns: [] }));
  };
  const introspection: DatabaseIntrospector = {
    getSchemas: async () => [{ name: schema }],
    getTables: tables,
    getMetadata: async () => ({ tables: await tables() }),
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "introspection") return introspection;
      const value = Reflect.get(target, property, target);
      // Kysely keeps its state in private fields, which only the instance itself can read.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function executedMigrations(db: Kysely<unknown>, schema: string | undefined): Promise<string[]> {
  const typed = db as Kysely<{ [migrationTableName]: { name: string } }>;
  const scoped = schema === undefined ? typed : typed.withSchema(schema);
  try {
    const rows = await scoped.selectFrom(migrationTableName).select("name").execute();
    return rows.map((r) => r.name);
  } catch {
    // No migration table yet: a new database. Real connection problems resurface in the Migrator.
    return [];
  }
}
