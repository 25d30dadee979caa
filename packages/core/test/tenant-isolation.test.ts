/**
 * Tenant isolation, over every RPC the platform implements (enumerated from `platform.operations`
 * and `platform.streams`, so RPCs added later are covered without touching this file), and the
 * daemon's bidirectional streams (`platform.bidiStreams`), whose callers the platform admits.
 *
 * Requests are built generically from each method's input descriptor; every id-like field
 * (`workspaceId`, `id`, `*Id`, `*Ids`, `newOwner`, `domain`) takes an identifier of workspace B.
 * The callers are every role of workspace A (owner, admin, editor, viewer), A's service accounts
 * (viewer and editor) and A's daemon. For each call:
 *
 * - aimed at B (`workspaceId` = B): the answer is `not_found` or `permission_denied` (or the same
 *   validation error a random id gets), never a success;
 * - aimed at A (or at no workspace) with B's ids in the other fields: whatever the outcome, it is
 *   the outcome random ids get, and a success carries none of B's identifiers;
 * - the error for B's existing ids equals the error for random ids once the ids are blanked out
 *   (no existence oracle);
 * - B's rows (every table: rows of B, of B's users, and everything that references them) are
 *   byte-for-byte what they were.
 *
 * Each RPC runs on its own copy of one seeded database, so a call that changes A (or deletes it)
 * cannot affect another RPC's run.
 */
import { randomUUID } from "node:crypto";
import {
  create,
  type DescField,
  type DescMessage,
  type DescMethodServerStreaming,
  type DescMethodUnary,
  ScalarType,
} from "@bufbuild/protobuf";
import {
  AccessRequestService,
  AuthorityType,
  AuthService,
  CertificateKeyType,
  CertificateService,
  GrantKind,
  InvitationService,
  PrincipalService,
  PrincipalType,
  ServiceAccountService,
  TargetService,
  TeamService,
  WebhookService,
  WorkspaceDomainService,
  WorkspaceService,
} from "@wap/api";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { tenantRows } from "@wap/test-kit/tenant-rows";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createArgon2PasswordHasher } from "../src/auth/passwords.js";
import { type CallContext, type Caller, createCallContext } from "../src/context.js";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { PlatformError } from "../src/errors.js";
import type { AnyBidiStreamingOperation } from "../src/events/streaming-operation.js";
import { createPlatform, type Platform } from "../src/platform/platform.js";
import { createManualClock } from "../src/runtime.js";
import { whenOpened } from "./support/message-queue.js";

// --- the seeded world ------------------------------------------------------------------------

const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
const start = new Date("2026-11-21T12:00:00Z");
const passwords = createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 });

async function platformOver(database: Database.Database): Promise<Platform> {
  return createPlatform({
    storage: await createSqliteStorage({ database, strictTransactions: true }),
    keyStore,
    clock: createManualClock(start),
    passwords,
  });
}

type Unary = DescMethodUnary<DescMessage, DescMessage>;
const call = (platform: Platform, caller: Caller, method: Unary, fields: Record<string, unknown>) =>
  platform.invoke(method, createCallContext(caller), create(method.input, fields as never));

interface World {
  /** The seeded database, serialised: every RPC starts from a copy. */
  readonly image: Buffer;
  readonly a: { readonly workspaceId: string; readonly callers: ReadonlyArray<readonly [string, Caller]> };
  readonly b: {
    readonly workspaceId: string;
    readonly userIds: readonly string[];
    /** B's identifiers; index 0 is the workspace. */
    readonly ids: readonly string[];
    readonly domain: string;
    /** Values that must never show up in an answer to A. */
    readonly secrets: readonly string[];
  };
}

async function seedWorld(): Promise<World> {
  const database = new Database(":memory:");
  const platform = await platformOver(database);
  const anonymous: Caller = { kind: "anonymous" };
  let n = 0;
  const signUp = async () => {
    const name = `iso${++n}x${randomUUID().slice(0, 6)}`;
    await call(platform, anonymous, AuthService.method.register as Unary, {
      name: `${name} Test`,
      email: `${name}@example.com`,
      username: name,
      password: "correct horse battery",
    });
    const tokens = (await call(platform, anonymous, AuthService.method.login as Unary, {
      email: `${name}@example.com`,
      password: "correct horse battery",
    })) as unknown as { accessToken: string };
    const { caller } = await platform.authenticate({ bearer: tokens.accessToken });
    if (caller.kind !== "user") throw new Error("no user");
    return caller;
  };
  const workspaceOf = async (owner: Caller, name: string) =>
    (
      (await call(platform, owner, WorkspaceService.method.createWorkspace as Unary, {
        name,
      })) as unknown as {
        workspace: { id: string };
      }
    ).workspace.id;
  const member = async (workspaceId: string, role: "admin" | "editor" | "viewer") => {
    const user = await signUp();
    const now = platform.services.clock.now();
    await platform.services.storage.members.insert({
      workspaceId,
      userId: user.userId,
      role,
      createdAt: now,
      updatedAt: now,
    });
    return user;
  };
  const serviceAccount = async (owner: Caller, workspaceId: string, roleName: "viewer" | "editor") => {
    const res = (await call(platform, owner, ServiceAccountService.method.createServiceAccount as Unary, {
      workspaceId,
      name: `sa-${roleName}-${++n}`,
      roleName,
    })) as unknown as { token: string; serviceAccount: { id: string } };
    return { caller: (await platform.authenticate({ bearer: res.token })).caller, id: res.serviceAccount.id };
  };
  const daemon = async (workspaceId: string, targetId: string | null) => {
    const now = platform.services.clock.now();
    const id = randomUUID();
    await platform.services.storage.daemons.insert({
      id,
      workspaceId,
      targetId,
      name: `host-${++n}`,
      status: "accepted",
      recordSessions: false,
      metadata: {},
      authPublicKey: "",
      authMethod: "tpm",
      onlineSince: null,
      createdAt: now,
      updatedAt: now,
    });
    return id;
  };

  // Workspace A: one caller per role, two service accounts, a daemon.
  const ownerA = await signUp();
  const wsA = await workspaceOf(ownerA, "workspace A");
  const callersA: Array<readonly [string, Caller]> = [["owner", ownerA]];
  for (const role of ["admin", "editor", "viewer"] as const) callersA.push([role, await member(wsA, role)]);
  for (const role of ["viewer", "editor"] as const) {
    callersA.push([`service account (${role})`, (await serviceAccount(ownerA, wsA, role)).caller]);
  }
  callersA.push(["daemon", { kind: "daemon", daemonId: await daemon(wsA, null), workspaceId: wsA }]);

  // Workspace B, with one of everything.
  const ownerB = await signUp();
  const wsB = await workspaceOf(ownerB, "workspace B secret name");
  const memberB = await member(wsB, "editor");
  const as = <T>(res: unknown) => res as T;
  const ssh = as<{ certificateAuthority: { id: string } }>(
    await call(platform, ownerB, CertificateService.method.createCertificateAuthority as Unary, {
      workspaceId: wsB,
      name: "b-ssh",
      keyType: CertificateKeyType.ED25519,
    }),
  ).certificateAuthority.id;
  const x509 = as<{ certificateAuthority: { id: string } }>(
    await call(platform, ownerB, CertificateService.method.createCertificateAuthority as Unary, {
      workspaceId: wsB,
      name: "b-x509",
      keyType: CertificateKeyType.ED25519,
      authorityType: AuthorityType.X509,
    }),
  ).certificateAuthority.id;
  const team = as<{ team: { id: string } }>(
    await call(platform, ownerB, TeamService.method.createTeam as Unary, {
      workspaceId: wsB,
      name: "b-team",
    }),
  ).team.id;
  await call(platform, ownerB, TeamService.method.addTeamMember as Unary, {
    workspaceId: wsB,
    teamId: team,
    userId: memberB.userId,
  });
  const target = as<{ target: { id: string } }>(
    await call(platform, ownerB, TargetService.method.createTarget as Unary, {
      workspaceId: wsB,
      name: "b-target",
      endpoints: ["10.9.9.9:4022"],
      tags: ["b-tag"],
    }),
  ).target.id;
  await call(platform, ownerB, PrincipalService.method.setPrincipals as Unary, {
    workspaceId: wsB,
    targetId: target,
    usernames: ["deploy"],
  });
  const principal = as<{ principals: Array<{ id: string }> }>(
    await call(platform, ownerB, PrincipalService.method.listPrincipals as Unary, { workspaceId: wsB }),
  ).principals[0]!.id;
  const accountB = await serviceAccount(ownerB, wsB, "editor");
  await call(platform, ownerB, PrincipalService.method.addSubjectsToPrincipal as Unary, {
    workspaceId: wsB,
    id: principal,
    subjectIds: [memberB.userId],
    type: PrincipalType.USER,
  });
  await call(platform, ownerB, PrincipalService.method.addSubjectsToPrincipal as Unary, {
    workspaceId: wsB,
    id: principal,
    subjectIds: [team],
    type: PrincipalType.TEAM,
  });
  await call(platform, ownerB, PrincipalService.method.addSubjectsToPrincipal as Unary, {
    workspaceId: wsB,
    id: principal,
    subjectIds: [accountB.id],
    type: PrincipalType.SERVICE_ACCOUNT,
  });
  // A pending just-in-time request of B's owner, under an on-request grant.
  await call(platform, ownerB, PrincipalService.method.addSubjectsToPrincipal as Unary, {
    workspaceId: wsB,
    id: principal,
    subjectIds: [ownerB.userId],
    type: PrincipalType.USER,
    kind: GrantKind.ON_REQUEST,
    approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["admin"] },
  });
  const accessRequest = as<{ request: { id: string } }>(
    await call(platform, ownerB, AccessRequestService.method.createAccessRequest as Unary, {
      workspaceId: wsB,
      targetId: target,
      login: "deploy",
      duration: { seconds: 600n, nanos: 0 },
      reason: "workspace B secret reason",
    }),
  ).request.id;
  // A webhook endpoint of B (disabled: nothing is sent from the fixture).
  const webhook = as<{ endpoint: { id: string } }>(
    await call(platform, ownerB, WebhookService.method.createWebhookEndpoint as Unary, {
      workspaceId: wsB,
      url: "https://hooks.b-corp.example/secret-path",
      description: "workspace B secret hook",
      disabled: true,
    }),
  ).endpoint.id;
  const daemonB = await daemon(wsB, target);
  const domain = "b-corp.example.com";
  await call(platform, ownerB, WorkspaceDomainService.method.createWorkspaceDomain as Unary, {
    workspaceId: wsB,
    domain,
  });
  const invite = as<{ link: string }>(
    await call(platform, ownerB, InvitationService.method.refreshInviteToken as Unary, { workspaceId: wsB }),
  ).link;

  const image = database.serialize();
  await platform.close();
  database.close();
  const ids = [
    wsB,
    ownerB.userId,
    memberB.userId,
    ssh,
    x509,
    team,
    target,
    principal,
    accountB.id,
    daemonB,
    accessRequest,
    webhook,
  ];
  return {
    image,
    a: { workspaceId: wsA, callers: callersA },
    b: {
      workspaceId: wsB,
      userIds: [ownerB.userId, memberB.userId],
      ids,
      domain,
      secrets: [
        ...ids,
        domain,
        "workspace B secret name",
        "workspace B secret reason",
        "workspace B secret hook",
        "hooks.b-corp.example/secret-path",
        invite.slice(invite.lastIndexOf("/") + 1),
      ],
    },
  };
}

// --- generic requests ------------------------------------------------------------------------

/** Where an identifier goes: an index into the pool of B's ids (or of random ones), or the domain. */
type Slot = { readonly slot: number } | { readonly domain: true };
type Template = Record<string, unknown>;

const isIdField = (name: string) =>
  name === "id" || name === "workspaceId" || name === "newOwner" || /Ids?$/.test(name);

/** A value the validators accept for most fields of this name (the point is to reach the access check). */
function stringFor(name: string): fc.Arbitrary<string> {
  if (/email/i.test(name)) return fc.constant("probe@example.com");
  if (/password/i.test(name)) return fc.constant("correct horse battery");
  if (name === "roleName") return fc.constantFrom("viewer", "editor", "admin");
  if (/token|code|secret/i.test(name)) return fc.constant(`probe-${randomUUID()}`);
  if (name === "name" || name === "username") return fc.constantFrom("probe", "probe-2");
  return fc.constantFrom("probe", "x");
}

function scalarFor(
  field: DescField & { scalar: ScalarType },
  name: string,
): fc.Arbitrary<unknown> | undefined {
  switch (field.scalar) {
    case ScalarType.STRING:
      return stringFor(name);
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.INT32:
    case ScalarType.UINT32:
      if (name === "limit") return fc.integer({ min: 1, max: 100 });
      if (name === "offset") return fc.integer({ min: 0, max: 10 });
      return undefined;
    default:
      return undefined;
  }
}

const durations: Record<string, bigint> = { lifetime: 2_628_000n * 2n };

/** A template for one request: id fields hold slots, other fields concrete values (or are left out). */
function templateFor(input: DescMessage, idCount: number): fc.Arbitrary<Template> {
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  const slot = fc.integer({ min: 0, max: idCount - 1 }).map((i): Slot => ({ slot: i }));
  for (const field of input.fields) {
    if (field.oneof) continue;
    const name = field.localName;
    let value: fc.Arbitrary<unknown> | undefined;
    if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING && name === "domain") {
      value = fc.constant({ domain: true } satisfies Slot);
    } else if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING && name === "workspaceId") {
      value = fc.constant({ slot: 0 } satisfies Slot);
    } else if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING && isIdField(name)) {
      value = slot;
    } else if (field.fieldKind === "scalar") {
      value = scalarFor(field as DescField & { scalar: ScalarType }, name);
    } else if (field.fieldKind === "enum") {
      const defined = field.enum.values.map((v) => v.number).filter((v) => v !== 0);
      value = defined.length > 0 ? fc.constantFrom(...defined) : undefined;
    } else if (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Duration") {
      value = fc.constant({ seconds: durations[name] ?? 3600n, nanos: 0 });
    } else if (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp") {
      value = fc.constant({ seconds: BigInt(start.getTime() / 1000 + 86_400), nanos: 0 });
    } else if (
      field.fieldKind === "list" &&
      field.listKind === "scalar" &&
      field.scalar === ScalarType.STRING
    ) {
      value = isIdField(name)
        ? fc.array(slot, { minLength: 1, maxLength: 3 })
        : fc.constantFrom<string[]>([], [name === "endpoints" ? "10.0.0.1:22" : "deploy"]);
    } else if (field.fieldKind === "list" && field.listKind === "enum") {
      const defined = field.enum.values.map((v) => v.number).filter((v) => v !== 0);
      value = fc.constant(defined.slice(0, 1));
    }
    if (value === undefined) continue;
    // Lists are always present; other fields are sometimes left out (explicit presence).
    parts[name] =
      field.fieldKind === "list" || isIdField(name) || name === "domain"
        ? value
        : fc.option(value, { freq: 5 });
  }
  return fc
    .record(parts)
    .map((record) => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== null)));
}

/** The request a template makes with one pool of identifiers. */
function materialise(
  template: Template,
  pool: { ids: readonly string[]; domain: string },
): Record<string, unknown> {
  const fill = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === "object" && "slot" in value)
      return pool.ids[(value as { slot: number }).slot];
    if (value && typeof value === "object" && "domain" in value) return pool.domain;
    return value;
  };
  return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fill(v)]));
}

const hasIdFields = (input: DescMessage) =>
  input.fields.some(
    (f) =>
      f.fieldKind !== "map" &&
      f.fieldKind !== "message" &&
      (isIdField(f.localName) || f.localName === "domain"),
  );

/** The template with every id slot but `workspaceId` pointing at identifier `k`. */
function sweep(template: Template, k: number): Template {
  const point = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(point)
      : value && typeof value === "object" && "slot" in value
        ? { slot: k }
        : value;
  return Object.fromEntries(
    Object.entries(template).map(([key, v]) => [key, key === "workspaceId" ? v : point(v)]),
  );
}

/** True when a field other than `workspaceId` carries one of B's identifiers. */
const carriesOtherIds = (template: Template) =>
  Object.entries(template).some(
    ([key, value]) =>
      key !== "workspaceId" &&
      [value].flat().some((v) => v !== null && typeof v === "object" && ("slot" in v || "domain" in v)),
  );

// --- outcomes --------------------------------------------------------------------------------

interface Outcome {
  readonly code: string;
  readonly reason: string;
  readonly message: string;
  readonly fields: string;
  readonly json: string;
}

const bigintSafe = (_: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);

async function outcomeOf(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    const response = await run();
    return { code: "ok", reason: "", message: "", fields: "", json: JSON.stringify(response, bigintSafe) };
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    return {
      code: error.code,
      reason: error.reason,
      message: error.message,
      fields: error.violations.map((v) => `${v.field}: ${v.description}`).join("; "),
      json: "",
    };
  }
}

/** Opens a bidirectional stream with no client messages and reads its first answer. */
async function firstMessage(platform: Platform, op: AnyBidiStreamingOperation, ctx: CallContext) {
  const answers = whenOpened(platform.bidiStream(op.method, ctx, noRequests()));
  try {
    return (await answers.next()).value;
  } finally {
    await answers.return(undefined);
  }
}

async function* noRequests(): AsyncGenerator<never> {}

/** The outcome with every identifier of either pool blanked out. */
function blanked(outcome: Outcome, values: readonly string[]): Omit<Outcome, "json"> {
  const blank = (text: string) => values.reduce((acc, v) => (v ? acc.split(v).join("<id>") : acc), text);
  return {
    code: outcome.code,
    reason: outcome.reason,
    message: blank(outcome.message),
    fields: blank(outcome.fields),
  };
}

// --- the suite -------------------------------------------------------------------------------

const world = await seedWorld();
const listing = new Database(world.image);
const procedures = await (async () => {
  const platform = await platformOver(listing);
  const unary = [...platform.operations.values()].map((op) => ({
    kind: "unary" as const,
    method: op.method as Unary,
    access: op.access,
  }));
  const streams = [...platform.streams.values()].map((op) => ({
    kind: "stream" as const,
    method: op.method as DescMethodServerStreaming<DescMessage, DescMessage>,
    access: op.access,
  }));
  await platform.close();
  return [...unary, ...streams];
})();
afterAll(() => listing.close());

/** Random stand-ins for B's identifiers, fixed for one RPC's run (so repeated calls agree). */
const randomPool = (): { ids: readonly string[]; domain: string } => ({
  ids: world.b.ids.map((): string => randomUUID()),
  domain: `r${randomUUID().slice(0, 8)}.example.com`,
});

describe("tenant isolation: callers of workspace A against workspace B", () => {
  it("covers every implemented RPC", () => {
    expect(procedures.length).toBeGreaterThanOrEqual(70);
    expect(new Set(procedures.map((p) => `${p.method.parent.typeName}/${p.method.name}`)).size).toBe(
      procedures.length,
    );
  });

  for (const procedure of procedures) {
    const { method, access } = procedure;
    const label = `${method.parent.name}/${method.name}`;
    const scoped = access.kind === "workspace";
    if (!scoped && !hasIdFields(method.input)) continue;

    it(`${label}`, async () => {
      // Two copies of the world: one sees B's ids, the other random ones. Calls that change A
      // change both copies alike, so each pair is always judged on the same state of A.
      const opened = await Promise.all(
        [0, 1].map(async () => {
          const database = new Database(world.image);
          return { database, platform: await platformOver(database) };
        }),
      );
      const [real, stand] = opened as [(typeof opened)[number], (typeof opened)[number]];
      const random = randomPool();
      const blanks = [...world.b.ids, world.b.domain, ...random.ids, random.domain, world.a.workspaceId];
      try {
        const before = tenantRows(real.database, world.b);
        let reachedAccessCheck = 0;
        const invoke = async (platform: Platform, caller: Caller, fields: Record<string, unknown>) => {
          if (procedure.kind === "unary")
            return outcomeOf(() => call(platform, caller, procedure.method, fields));
          const controller = new AbortController();
          const timer = setTimeout(() => controller.abort(), 1000);
          try {
            return await outcomeOf(async () => {
              const stream = platform.stream(
                procedure.method,
                createCallContext(caller, { signal: controller.signal }),
                create(procedure.method.input, fields as never),
              );
              for await (const message of stream) return message;
              return {};
            });
          } finally {
            clearTimeout(timer);
          }
        };

        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom(...world.a.callers),
            templateFor(method.input, world.b.ids.length),
            async ([, chosen], template) => {
              type Variant = {
                caller: Caller;
                aimedAtB: boolean;
                fields: (pool: typeof random) => Record<string, unknown>;
              };
              const variants: Variant[] = [];
              // Aimed at B: every caller of A (they all stop at the access check, so this is cheap).
              if ("workspaceId" in template) {
                for (const [, caller] of world.a.callers) {
                  variants.push({ caller, aimedAtB: true, fields: (pool) => materialise(template, pool) });
                }
              }
              if (carriesOtherIds(template)) {
                const inA = (t: Template) => (pool: typeof random) => ({
                  ...materialise(t, pool),
                  ...("workspaceId" in t && { workspaceId: world.a.workspaceId }),
                });
                variants.push({ caller: chosen, aimedAtB: false, fields: inA(template) });
                // And each of B's identifiers in every id field, by A's owner (who gets furthest) and
                // the chosen caller: a random pick alone could miss the one id that matters.
                for (let k = 1; k < world.b.ids.length; k++) {
                  const swept = sweep(template, k);
                  for (const caller of new Set([world.a.callers[0]![1], chosen])) {
                    variants.push({ caller, aimedAtB: false, fields: inA(swept) });
                  }
                }
              }
              for (const { caller, ...variant } of variants) {
                const sent = variant.fields({ ids: world.b.ids, domain: world.b.domain });
                const withB = await invoke(real.platform, caller, sent);
                const withRandom = await invoke(stand.platform, caller, variant.fields(random));
                // No existence oracle: B's real ids are answered exactly like ids that name nothing.
                expect(blanked(withB, blanks), `${label}: B's ids vs random ids`).toEqual(
                  blanked(withRandom, blanks),
                );
                if (variant.aimedAtB && scoped) {
                  expect(
                    ["not_found", "permission_denied", "invalid_argument"],
                    `${label} aimed at B`,
                  ).toContain(withB.code);
                  if (withB.code !== "invalid_argument") reachedAccessCheck++;
                }
                if (withB.code === "ok") {
                  // What the caller sent may come back (a name it chose); nothing else of B may.
                  const echoed = JSON.stringify(sent, bigintSafe);
                  for (const secret of world.b.secrets.filter((v) => !echoed.includes(v))) {
                    expect(withB.json, `${label} answered with B's data`).not.toContain(secret);
                  }
                }
              }
              expect(tenantRows(real.database, world.b), `${label} changed B`).toEqual(before);
            },
          ),
          { numRuns: 8 },
        );
        // The generated requests were valid enough to be judged on access, not only on input.
        if (scoped && method.input.fields.some((f) => f.localName === "workspaceId")) {
          expect(reachedAccessCheck, `${label}: no request passed validation`).toBeGreaterThan(0);
        }
      } finally {
        for (const { platform, database } of opened) {
          await platform.close();
          database.close();
        }
      }
    });
  }
});

describe("tenant isolation: the daemon's bidirectional streams", () => {
  const bidi = (async () => {
    const platform = await platformOver(listing);
    const streams = [...platform.bidiStreams.values()];
    await platform.close();
    return streams;
  })();

  it("declares who may open each of them", async () => {
    const streams = await bidi;
    expect(streams.map((op) => `${op.method.parent.name}/${op.method.name}`).sort()).toEqual([
      "DaemonControlService/Connect",
      "DaemonSessionService/Session",
    ]);
    for (const op of streams) expect(op.access.kind).toBe("signed_daemon");
  });

  it("admits A's daemon, and refuses every other caller of A", async () => {
    const database = new Database(world.image);
    // No instance holds the streams here: an admitted daemon hears that, and nothing else does.
    const platform = await platformOver(database);
    const hostMissing: Record<string, string> = {
      "DaemonControlService/Connect": "this server does not hold daemon control streams",
      "DaemonSessionService/Session": "this server does not relay terminal sessions",
    };
    try {
      for (const op of await bidi) {
        const label = `${op.method.parent.name}/${op.method.name}`;
        const anonymousOutcome = await outcomeOf(() =>
          firstMessage(platform, op, createCallContext({ kind: "anonymous" })),
        );
        expect(anonymousOutcome.code, `${label} anonymous`).toBe("unauthenticated");
        expect(anonymousOutcome.reason, `${label} anonymous`).toBe("DAEMON_CREDENTIALS_REQUIRED");
        for (const [name, caller] of world.a.callers) {
          const opened = await outcomeOf(() => firstMessage(platform, op, createCallContext(caller)));
          if (caller.kind === "daemon") {
            expect(opened.code, `${label} as ${name}`).toBe("unimplemented");
            expect(opened.message, `${label} as ${name}`).toBe(hostMissing[label]);
          } else {
            expect(opened.code, `${label} as ${name}`).toBe("permission_denied");
            expect(opened.reason, `${label} as ${name}`).toBe("DAEMONS_ONLY");
          }
        }
      }
      expect(world.a.callers.some(([, caller]) => caller.kind === "daemon")).toBe(true);
    } finally {
      await platform.close();
      database.close();
    }
  });
});
