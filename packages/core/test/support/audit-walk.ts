/**
 * The harness of the audit walk: a fresh platform per call over an in-memory SQLite database the
 * test holds (so it reads committed audit rows and whole-database snapshots directly), storage
 * that can fail the transaction holding an audit entry on demand, and the shape of the walk's
 * table (support/audit-walk-steps.ts).
 */
import type { Resolver } from "node:dns/promises";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { type FakeStripe, startFakeStripe } from "@wap/test-kit/fake-stripe";
import { startTxtDnsServer } from "@wap/test-kit/txt-dns";
import BetterSqlite3 from "better-sqlite3";
import { createStripeBillingProvider } from "../../src/billing/stripe.js";
import { type Caller, createCallContext } from "../../src/context.js";
import type { AppendUnit, Repositories, Storage } from "../../src/storage/storage.js";
import { createTestPlatform, type TestPlatform } from "../support.js";
import { createMemoryMailer, publicBaseUrl } from "./accounts.js";

// --- what the walk's table says ------------------------------------------------------------------

/** The facts of the request under test, which every entry it writes must carry. */
export interface RequestFacts {
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly requestId: string;
}

/** What one audit entry must say beyond the request facts and `statusCode: "ok"`. */
export interface ExpectedEntry {
  readonly action: string;
  readonly resource: string;
  /** `actor_type` and `actor_id` of the row. */
  readonly actor: { readonly type: string; readonly id: string };
  /** The workspace of the row; null for account-level entries. */
  readonly workspaceId: string | null;
}

/** A call made ready in a fresh fixture. */
export interface PreparedCall<R = unknown> {
  /** Makes the call with the facts under test; resolves with the response. */
  call(facts: RequestFacts): Promise<R>;
  /** The entries the call must leave, in the order written. */
  entries(response: R): ExpectedEntry[] | Promise<ExpectedEntry[]>;
}

/** A mutating RPC that writes its audit entries: how to make it succeed. */
export interface AuditedStep {
  readonly prepare: (f: WalkFixture) => Promise<PreparedCall>;
  /**
   * Tables the call changes before, and whatever comes of, the transaction holding its entry
   * (e.g. a challenge spent before the response is checked), and why.
   */
  readonly committedFirst?: { readonly tables: readonly string[]; readonly why: string };
}

/** An RPC that writes no audit entry, and why. */
export interface UnauditedStep {
  readonly unaudited: string;
  /** A successful call, when one can be made in core: the walk checks it leaves no entry. */
  readonly prepare?: (f: WalkFixture) => Promise<Pick<PreparedCall, "call">>;
}

export type WalkStep = AuditedStep | UnauditedStep;

export const isAudited = (step: WalkStep): step is AuditedStep => !("unaudited" in step);

// --- faults ----------------------------------------------------------------------------------------

/** Thrown by storage on demand; no operation has a reason to catch it. */
export class InjectedFault extends Error {
  override readonly name = "InjectedFault";
}

/**
 * - `none`: storage as it is.
 * - `rollback-audited`: the transaction that writes an audit entry is rolled back at its end, as
 *   if its commit had failed (an entry written outside a transaction fails instead).
 * - `no-transaction-after-audit`: a transaction begun after the one holding the entry has
 *   committed fails at once, so a change made after its entry cannot pass unnoticed.
 */
export type FaultMode = "none" | "rollback-audited" | "no-transaction-after-audit";

export interface StorageFaults {
  mode: FaultMode;
  /** Whether a transaction holding an audit entry has committed since the last `reset`. */
  auditCommitted: boolean;
  /** What the last injected fault was about; null if none fired. */
  fired: string | null;
  reset(mode: FaultMode): void;
}

function createFaults(): StorageFaults {
  return {
    mode: "none",
    auditCommitted: false,
    fired: null,
    reset(mode) {
      this.mode = mode;
      this.auditCommitted = false;
      this.fired = null;
    },
  };
}

function fire(faults: StorageFaults, what: string): never {
  faults.fired = what;
  throw new InjectedFault(what);
}

/** Reads every member through to `target`, functions bound to it, except the ones overridden. */
function through<T extends object>(target: T, overrides: Partial<Record<PropertyKey, unknown>>): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key];
      const value: unknown = Reflect.get(object, key, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

/** `storage` with the faults of {@link StorageFaults} wired into its transactions. */
function withFaults(storage: Storage, faults: StorageFaults): Storage {
  // Nested transactions run inside the outer one: only the outermost commits.
  let depth = 0;
  let appended = false;
  const auditEvents = (repos: Repositories, inTransaction: boolean) =>
    through(repos.auditEvents, {
      append: async (event: Parameters<Repositories["auditEvents"]["append"]>[0]) => {
        if (!inTransaction && faults.mode === "rollback-audited") {
          fire(faults, "an audit entry written outside a transaction");
        }
        await repos.auditEvents.append(event);
        if (inTransaction) appended = true;
        else faults.auditCommitted = true;
      },
    });
  return through(storage, {
    auditEvents: auditEvents(storage, false),
    // Appended units (certificate issuance) commit in a transaction of their own.
    append: async (unit: AppendUnit) => {
      const holdsEntry = (unit.auditEvents?.length ?? 0) > 0;
      if (faults.mode === "no-transaction-after-audit" && faults.auditCommitted) {
        fire(faults, "a transaction begun after the one holding the audit entry committed");
      }
      if (holdsEntry && faults.mode === "rollback-audited") {
        fire(faults, "the transaction holding the audit entry failed to commit");
      }
      await storage.append(unit);
      if (holdsEntry) faults.auditCommitted = true;
    },
    transaction: async <T>(fn: (tx: Repositories) => Promise<T>) => {
      let holdsEntry = false;
      const result = await storage.transaction(async (tx) => {
        const outermost = depth === 0;
        if (outermost) {
          appended = false;
          if (faults.mode === "no-transaction-after-audit" && faults.auditCommitted) {
            fire(faults, "a transaction begun after the one holding the audit entry committed");
          }
        }
        depth++;
        let value: T;
        try {
          value = await fn(through(tx, { auditEvents: auditEvents(tx, true) }));
        } finally {
          depth--;
        }
        if (outermost && appended) {
          if (faults.mode === "rollback-audited") {
            fire(faults, "the transaction holding the audit entry failed to commit");
          }
          holdsEntry = true;
        }
        return value;
      });
      if (holdsEntry) faults.auditCommitted = true;
      return result;
    },
  });
}

// --- the services the walk talks to over the network -----------------------------------------

/** A loopback DNS server (TXT records from `zone`) and a fake Stripe, shared by every fixture. */
export interface WalkNetwork {
  readonly zone: Map<string, string[][]>;
  readonly resolver: Resolver;
  readonly stripe: FakeStripe;
  close(): Promise<void>;
}

export async function startWalkNetwork(): Promise<WalkNetwork> {
  const zone = new Map<string, string[][]>();
  const dns = await startTxtDnsServer((name) => zone.get(name));
  const stripe = await startFakeStripe();
  return {
    zone,
    resolver: dns.resolver,
    stripe,
    async close() {
      await Promise.all([dns.close(), stripe.close()]);
    },
  };
}

// --- the fixture -------------------------------------------------------------------------------------

/** One audit_events row as stored. */
export interface AuditRow {
  readonly seq: number;
  readonly workspace_id: string | null;
  readonly actor_id: string;
  readonly actor_type: string;
  readonly action: string;
  readonly resource: string;
  readonly ip_address: string;
  readonly user_agent: string;
  readonly status_code: string;
  readonly request_id: string;
  readonly occurred_at: number;
}

export type WalkFixture = TestPlatform & {
  /** The connection under the storage: reads see what has committed. */
  readonly database: BetterSqlite3.Database;
  readonly faults: StorageFaults;
  readonly mail: ReturnType<typeof createMemoryMailer>;
  readonly network: WalkNetwork;
  /** Calls `method` as `caller` with the request facts (and headers) of the call under test. */
  invoke<I extends DescMessage, O extends DescMessage>(
    caller: Caller,
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
    facts: RequestFacts,
    headers?: Readonly<Record<string, string>>,
  ): Promise<MessageShape<O>>;
  /** The audit rows committed after `seq`, oldest first. */
  auditRowsAfter(seq: number): AuditRow[];
  /** The `seq` of the newest audit row (0 when there is none). */
  lastAuditSeq(): number;
  /** Every table's rows, to compare before and after a call. */
  snapshot(): Map<string, string[]>;
  close(): Promise<void>;
};

/** A platform of its own over a fresh in-memory database. */
export async function createWalkFixture(network: WalkNetwork): Promise<WalkFixture> {
  const database = new BetterSqlite3(":memory:");
  const faults = createFaults();
  const mail = createMemoryMailer();
  const storage = withFaults(await createSqliteStorage({ database, strictTransactions: true }), faults);
  const t = await createTestPlatform({
    storage,
    mailer: mail.mailer,
    dns: network.resolver,
    config: { publicBaseUrl },
    // The walk compares tables before and after one call: no background delivery writes meanwhile.
    webhooks: { deliver: false },
    billing: createStripeBillingProvider({
      secretKey: "sk_test_walk",
      webhookSecret: "whsec_walk",
      priceId: "price_team",
      host: "127.0.0.1",
      port: network.stripe.port,
      protocol: "http",
      maxNetworkRetries: 0,
    }),
  });
  const invoke: WalkFixture["invoke"] = (caller, method, request, facts, headers) =>
    t.platform.invoke(
      method,
      createCallContext(caller, { ...facts, ...(headers && { headers }) }),
      create(method.input, request),
    );
  return {
    ...t,
    database,
    faults,
    mail,
    network,
    invoke,
    auditRowsAfter(seq) {
      return database.prepare("select * from audit_events where seq > ? order by seq").all(seq) as AuditRow[];
    },
    lastAuditSeq() {
      const row = database.prepare("select max(seq) as seq from audit_events").get() as {
        seq: number | null;
      };
      return row.seq ?? 0;
    },
    snapshot() {
      const tables = database
        .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")
        .all() as { name: string }[];
      const encode = (_key: string, value: unknown) =>
        value instanceof Uint8Array ? Buffer.from(value).toString("hex") : value;
      return new Map(
        tables.map(({ name }) => [
          name,
          database
            .prepare(`select * from "${name}"`)
            .all()
            .map((row) => JSON.stringify(row, encode))
            .sort(),
        ]),
      );
    },
    async close() {
      await t.platform.close();
      database.close();
    },
  };
}
