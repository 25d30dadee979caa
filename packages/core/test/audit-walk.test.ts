/**
 * The audit walk: every RPC of the contract that is not NO_SIDE_EFFECTS, and every operation this
 * build registers, has a step in support/audit-walk-steps.ts. Each audited step makes one
 * successful call in a fresh platform, with a client address and user agent, and the walk checks
 *
 * - the call left exactly the entries the table names (actor, action, resource, workspace), each
 *   with the call's address, user agent, request id, time and `statusCode: "ok"`, committed;
 * - no transaction began after the one that holds the entry (a change cannot follow its entry);
 * - in a second fresh platform, when the transaction holding the entry fails to commit, the call
 *   fails and the database is exactly as before: no entry, and no part of the change.
 *
 * A step that writes no entry says why; where the call can be made in core, the walk makes it and
 * checks it leaves none. A mutating RPC missing from the table fails here, by name.
 */
import { randomUUID } from "node:crypto";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { platformServices } from "@wap/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { procedureOf } from "../src/platform/platform.js";
import { allOperations, bidiStreamingOperations, streamingOperations } from "../src/platform/registry.js";
import {
  type AuditRow,
  createWalkFixture,
  InjectedFault,
  isAudited,
  type RequestFacts,
  startWalkNetwork,
  type WalkFixture,
  type WalkNetwork,
} from "./support/audit-walk.js";
import { walkSteps } from "./support/audit-walk-steps.js";

interface Rpc {
  readonly procedure: string;
  readonly mutating: boolean;
  /** Declared by a core operation (unary or streaming), with who may call it. */
  readonly registered: boolean;
  /** A unary RPC, which `platform.invoke` can call. */
  readonly unary: boolean;
}

type Method = (typeof allOperations)[number]["method"];

/** Every RPC of the contract, and every operation registered (even one missing from the contract). */
function everyRpc(): Rpc[] {
  const registered = new Map<string, Method>();
  for (const op of [...allOperations, ...streamingOperations, ...bidiStreamingOperations]) {
    registered.set(procedureOf(op.method), op.method as Method);
  }
  const methods = new Map<string, { idempotency: MethodOptions_IdempotencyLevel; methodKind: string }>(
    registered,
  );
  for (const service of platformServices) for (const m of service.methods) methods.set(procedureOf(m), m);
  return [...methods]
    .map(([procedure, m]) => ({
      procedure,
      mutating: m.idempotency !== MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS,
      registered: registered.has(procedure),
      unary: m.methodKind === "unary",
    }))
    .sort((a, b) => a.procedure.localeCompare(b.procedure));
}

const rpcs = everyRpc();
const mutating = rpcs.filter((r) => r.mutating);

let network: WalkNetwork;
beforeAll(async () => {
  network = await startWalkNetwork();
});
afterAll(() => network?.close());

let counter = 0;
/** The facts of one call: an address (v4 and v6 in turn), a user agent and a request id. */
function factsFor(procedure: string): RequestFacts {
  const n = ++counter;
  return {
    ipAddress: n % 2 === 0 ? `2001:db8::${n.toString(16)}` : `203.0.113.${n % 250}`,
    userAgent: `audit-walk/1.0 (${procedure.slice(1)})`,
    requestId: randomUUID(),
  };
}

/** A row as the walk compares it. */
function shown(row: AuditRow) {
  return {
    actor: { type: row.actor_type, id: row.actor_id },
    action: row.action,
    resource: row.resource,
    workspaceId: row.workspace_id,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    requestId: row.request_id,
    statusCode: row.status_code,
    at: row.occurred_at,
  };
}

async function withFixture<T>(run: (f: WalkFixture) => Promise<T>): Promise<T> {
  const f = await createWalkFixture(network);
  try {
    return await run(f);
  } finally {
    await f.close();
  }
}

describe("the audit walk's table", () => {
  it("has a step for every mutating RPC", () => {
    const missing = mutating.filter((r) => !walkSteps.has(r.procedure)).map((r) => r.procedure);
    expect(
      missing,
      "mutating RPCs with no audit-walk step: add one to test/support/audit-walk-steps.ts",
    ).toEqual([]);
  });

  it("walks streams declared in core, each with who may open it", () => {
    const undeclared = rpcs.filter((r) => !r.unary && !r.registered).map((r) => r.procedure);
    expect(undeclared, "streaming RPCs with no operation (and access rule) in core").toEqual([]);
  });

  it("names only mutating RPCs of the contract or of this build", () => {
    const known = new Set(mutating.map((r) => r.procedure));
    const stale = [...walkSteps.keys()].filter((p) => !known.has(p));
    expect(stale, "audit-walk steps for RPCs that do not exist or are NO_SIDE_EFFECTS").toEqual([]);
  });

  it("makes a call of every unary operation that writes no entry", () => {
    const uncalled = mutating
      .filter((r) => r.registered && r.unary)
      .filter((r) => {
        const step = walkSteps.get(r.procedure);
        return step !== undefined && !isAudited(step) && step.prepare === undefined;
      })
      .map((r) => r.procedure);
    expect(uncalled).toEqual([]);
  });
});

describe("the walk's storage faults", () => {
  const anEntry = (f: WalkFixture) => ({
    id: randomUUID(),
    workspaceId: null,
    actorId: "",
    actorType: "anonymous",
    action: "walk.check",
    resource: "walk:check",
    ipAddress: "",
    userAgent: "",
    statusCode: "ok",
    requestId: randomUUID(),
    timestamp: f.clock.now(),
  });
  const aSecret = (f: WalkFixture) => ({
    name: `walk-${randomUUID()}`,
    sealed: new Uint8Array([1]),
    createdAt: f.clock.now(),
  });

  it("roll back the transaction holding an entry, with the change it holds", async () => {
    await withFixture(async (f) => {
      const before = f.snapshot();
      f.faults.reset("rollback-audited");
      const write = f.storage.transaction(async (tx) => {
        await tx.secrets.insertIfAbsent(aSecret(f));
        await tx.auditEvents.append(anEntry(f));
      });
      await expect(write).rejects.toBeInstanceOf(InjectedFault);
      expect(f.snapshot()).toEqual(before);
    });
  });

  it("fail a transaction begun after the one holding an entry committed", async () => {
    await withFixture(async (f) => {
      f.faults.reset("no-transaction-after-audit");
      await f.storage.transaction((tx) => tx.secrets.insertIfAbsent(aSecret(f)));
      await f.storage.transaction((tx) => tx.auditEvents.append(anEntry(f)));
      const later = f.storage.transaction((tx) => tx.secrets.insertIfAbsent(aSecret(f)));
      await expect(later).rejects.toBeInstanceOf(InjectedFault);
    });
  });
});

describe("every mutating RPC", () => {
  it.each(mutating.map((r) => [r.procedure, r] as const))("%s", async (procedure, rpc) => {
    const step = walkSteps.get(procedure);
    if (step === undefined) {
      throw new Error(
        `${procedure} is a mutating RPC with no audit-walk step: add to test/support/audit-walk-steps.ts ` +
          "how to make it succeed and the audit entries it writes, or why it writes none",
      );
    }

    if (!isAudited(step)) {
      expect(step.unaudited.length, "say why it writes no entry").toBeGreaterThan(20);
      if (step.prepare === undefined) {
        // A stream: no unary call to make through `platform.invoke`.
        expect(rpc.unary).toBe(false);
        return;
      }
      await withFixture(async (f) => {
        const { call } = await step.prepare!(f);
        const before = f.lastAuditSeq();
        await call(factsFor(procedure));
        expect(f.auditRowsAfter(before).map(shown), `${procedure} wrote audit entries`).toEqual([]);
      });
      return;
    }

    // One successful call: exactly the table's entries, carrying the request's facts.
    await withFixture(async (f) => {
      const prepared = await step.prepare(f);
      const facts = factsFor(procedure);
      const before = f.lastAuditSeq();
      f.faults.reset("no-transaction-after-audit");
      let response: unknown;
      try {
        response = await prepared.call(facts);
      } finally {
        const fired = f.faults.fired;
        f.faults.reset("none");
        expect(fired, `${procedure}: ${fired}`).toBeNull();
      }
      expect(f.database.inTransaction, "a transaction was left open").toBe(false);
      const expected = (await prepared.entries(response)).map((e) => ({
        ...e,
        ipAddress: facts.ipAddress,
        userAgent: facts.userAgent,
        requestId: facts.requestId,
        statusCode: "ok",
        at: f.clock.now().getTime(),
      }));
      expect(expected.length).toBeGreaterThan(0);
      expect(f.auditRowsAfter(before).map(shown)).toEqual(expected);
    });

    // The same call whose audited transaction fails to commit: nothing of it remains.
    await withFixture(async (f) => {
      const prepared = await step.prepare(f);
      const before = f.snapshot();
      const lastSeq = f.lastAuditSeq();
      f.faults.reset("rollback-audited");
      let outcome: unknown;
      try {
        outcome = await prepared.call(factsFor(procedure)).then(
          () => "succeeded",
          (error: unknown) => error,
        );
      } finally {
        f.faults.reset("none");
      }
      expect(outcome, `${procedure} must fail when its entry cannot commit`).toBeInstanceOf(InjectedFault);
      expect(f.lastAuditSeq()).toBe(lastSeq);
      const after = f.snapshot();
      const spentFirst = new Set(step.committedFirst?.tables);
      const changed = [...after.keys()].filter(
        (table) =>
          !spentFirst.has(table) && JSON.stringify(after.get(table)) !== JSON.stringify(before.get(table)),
      );
      expect(changed, `${procedure} committed changes without their audit entry`).toEqual([]);
    });
  });
});
