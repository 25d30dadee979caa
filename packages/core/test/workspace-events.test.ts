/**
 * Workspace events: one per audited change, published only after the change committed, and
 * streamed by SubscribeWorkspaceEvents.
 */
import { create, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  AuthService,
  ServiceAccountService,
  type SubscribeWorkspaceEventsResponseSchema,
  WorkspaceService,
} from "@wap/api";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createArgon2PasswordHasher } from "../src/auth/passwords.js";
import { type Caller, createCallContext } from "../src/context.js";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { createAfterCommitWatch } from "../src/events/after-commit.js";
import { createInProcessEventBus, type EventBus, type EventPayload } from "../src/events/event-bus.js";
import { subscribeTopic } from "../src/events/topic-subscription.js";
import { createPlatform } from "../src/platform/platform.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

type StreamedEvent = MessageShape<typeof SubscribeWorkspaceEventsResponseSchema>;

let t: TestPlatform;
let ada: Awaited<ReturnType<TestPlatform["owner"]>>;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

/** Everything published on `topic` from now on. */
async function record(bus: EventBus, topic: string) {
  const seen: EventPayload[] = [];
  await bus.subscribe(topic, (payload) => seen.push(payload));
  return seen;
}

/** Every event of the calls answered so far, delivered. */
const settle = () => t.platform.drain();
/** A stream subscribes to the bus when first read, asynchronously; nothing tells when it has. */
const subscribed = () => new Promise((resolve) => setTimeout(resolve, 20));

function subscribe(
  caller: Caller = ada.caller,
  request: { workspaceId?: string; eventTypes?: string[] } = {},
) {
  const controller = new AbortController();
  const ctx = createCallContext(caller, { signal: controller.signal });
  const stream = t.platform.stream(
    WorkspaceService.method.subscribeWorkspaceEvents,
    ctx,
    create(WorkspaceService.method.subscribeWorkspaceEvents.input, {
      workspaceId: ada.workspaceId,
      ...request,
    }),
  );
  const iterator = stream[Symbol.asyncIterator]();
  return { iterator, cancel: () => controller.abort() };
}

describe("workspace events on the bus", () => {
  it("publishes one event per audited change, with the audit event's id and action", async () => {
    const seen = await record(t.platform.services.events, `workspace:${ada.workspaceId}`);
    await t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
      workspaceId: ada.workspaceId,
      name: "Renamed",
    });
    await settle();
    const audit = await t.storage.auditEvents.list(ada.workspaceId, { limit: 10, offset: 0 });
    const row = audit.items.find((e) => e.action === "workspace.update");
    expect(seen).toEqual([
      {
        id: row?.id,
        type: "workspace.update",
        resource: `workspace:${ada.workspaceId}`,
        createdAt: t.clock.now().toISOString(),
      },
    ]);
  });

  it("publishes nothing for a change that was rolled back", async () => {
    const seen = await record(t.platform.services.events, `workspace:${ada.workspaceId}`);
    const account = { workspaceId: ada.workspaceId, name: "ci" };
    await t.call(ada.caller, ServiceAccountService.method.createServiceAccount, account);
    await expectCode(
      t.call(ada.caller, ServiceAccountService.method.createServiceAccount, account),
      "already_exists",
    );
    await settle();
    expect(seen.map((e) => (e as { type: string }).type)).toEqual(["service_account.create"]);
  });

  it("tells the subscribers of a deleted workspace", async () => {
    const seen = await record(t.platform.services.events, `workspace:${ada.workspaceId}`);
    await t.call(ada.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: ada.workspaceId });
    await settle();
    expect(seen).toMatchObject([{ type: "workspace.delete" }]);
  });

  it("a failing bus does not fail the request; the failure is reported", async () => {
    const failures: string[] = [];
    const broken: EventBus = {
      ...createInProcessEventBus(),
      publish: async () => {
        throw new Error("bus down");
      },
    };
    const platform = await createPlatform({
      storage: await createSqliteStorage({ filename: ":memory:", strictTransactions: true }),
      keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
      passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
      events: broken,
      onPublishError: (error, topic) => failures.push(`${topic}: ${(error as Error).message}`),
    });
    try {
      const anonymous = createCallContext({ kind: "anonymous" });
      const account = { email: "eve@example.com", password: "correct horse battery" };
      await platform.invoke(
        AuthService.method.register,
        anonymous,
        create(AuthService.method.register.input, { ...account, name: "Eve", username: "eve" }),
      );
      const login = await platform.invoke(
        AuthService.method.login,
        anonymous,
        create(AuthService.method.login.input, account),
      );
      const { caller } = await platform.authenticate({ bearer: login.accessToken });
      const ctx = createCallContext(caller);
      const created = await platform.invoke(
        WorkspaceService.method.createWorkspace,
        ctx,
        create(WorkspaceService.method.createWorkspace.input, { name: "Still works" }),
      );
      await platform.drain();
      // The account's own changes (registration) went out on `accounts` and failed the same way.
      expect(failures.filter((f) => f.startsWith("workspace:"))).toEqual([
        `workspace:${created.workspace?.id}: bus down`,
      ]);
      expect(failures.every((f) => /^(workspace:[^:]+|accounts): bus down$/.test(f))).toBe(true);
    } finally {
      await platform.close();
    }
  });
});

describe("events staged until commit", () => {
  it("releases a transaction's events only when it commits, nested ones with their outer one", async () => {
    const outbox = createAfterCommitWatch(t.storage).forCall();
    const event = (topic: string) => ({ topic, payload: null });
    await outbox.storage.transaction(async (tx) => outbox.stage(tx, event("committed")));
    await outbox.storage
      .transaction(async (tx) => {
        outbox.stage(tx, event("rolled back"));
        throw new Error("rollback");
      })
      .catch(() => undefined);
    await outbox.storage
      .transaction(async () => {
        await outbox.storage.transaction(async (inner) => outbox.stage(inner, event("inner of failed")));
        throw new Error("rollback");
      })
      .catch(() => undefined);
    await outbox.storage.transaction(async (outer) => {
      await outbox.storage
        .transaction(async (inner) => {
          outbox.stage(inner, event("failed savepoint"));
          throw new Error("rollback to savepoint");
        })
        .catch(() => undefined);
      outbox.stage(outer, event("outer of failed savepoint"));
    });
    outbox.stage(outbox.storage, event("no transaction"));
    expect(outbox.committed().map((e) => e.topic)).toEqual([
      "committed",
      "outer of failed savepoint",
      "no transaction",
    ]);
  });
});

describe("SubscribeWorkspaceEvents", () => {
  it("streams changes as they happen, filtered by type, and ends when the caller leaves", async () => {
    const all = subscribe();
    const onlyAccounts = subscribe(ada.caller, { eventTypes: ["service_account.create"] });
    const first = all.iterator.next();
    const firstAccount = onlyAccounts.iterator.next();
    await subscribed();
    await t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
      workspaceId: ada.workspaceId,
      description: "new",
    });
    const created = await t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
      workspaceId: ada.workspaceId,
      name: "bot",
    });
    const update = (await first).value as StreamedEvent;
    expect(update).toMatchObject({ type: "workspace.update", workspaceId: ada.workspaceId });
    expect(JSON.parse(update.payloadJson)).toEqual({ resource: `workspace:${ada.workspaceId}` });
    expect(timestampDate(update.createdAt!)).toEqual(t.clock.now());
    expect(((await all.iterator.next()).value as StreamedEvent).type).toBe("service_account.create");
    const account = (await firstAccount).value as StreamedEvent;
    expect(account.type).toBe("service_account.create");
    expect(JSON.parse(account.payloadJson)).toEqual({
      resource: `service_account:${created.serviceAccount?.id}`,
    });

    const pending = all.iterator.next();
    all.cancel();
    expect(await pending).toEqual({ done: true, value: undefined });
    onlyAccounts.cancel();
    expect(await onlyAccounts.iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("ends after the workspace is deleted", async () => {
    const stream = subscribe();
    const first = stream.iterator.next();
    await subscribed();
    await t.call(ada.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: ada.workspaceId });
    expect(((await first).value as StreamedEvent).type).toBe("workspace.delete");
    expect((await stream.iterator.next()).done).toBe(true);
  });

  it("needs workspace access, and says nothing about other workspaces", async () => {
    const bob = await t.owner();
    await expectCode(subscribe(bob.caller).iterator.next(), "not_found");
    await expectCode(
      subscribe(ada.caller, { workspaceId: "not-a-uuid" }).iterator.next(),
      "invalid_argument",
    );
    await expectCode(subscribe({ kind: "anonymous" }).iterator.next(), "unauthenticated");
  });
});

describe("subscribeTopic", () => {
  it("cuts off a reader that falls too far behind instead of buffering without bound", async () => {
    const bus = createInProcessEventBus();
    const controller = new AbortController();
    const events = (await subscribeTopic(bus, "t", controller.signal, { maxBuffered: 2 }))[
      Symbol.asyncIterator
    ]();
    for (const n of [1, 2, 3]) await bus.publish("t", n);
    await new Promise(setImmediate); // the bus delivers in microtasks
    await expectCode(events.next(), "resource_exhausted");
  });

  it("unsubscribes when the caller goes away, even before the first read", async () => {
    const inner = createInProcessEventBus();
    let unsubscribed = 0;
    const bus: EventBus = {
      ...inner,
      subscribe: async (topic, handler) => {
        const off = await inner.subscribe(topic, handler);
        return () => {
          unsubscribed++;
          off();
        };
      },
    };
    const controller = new AbortController();
    await subscribeTopic(bus, "t", controller.signal);
    expect(unsubscribed).toBe(0);
    controller.abort();
    expect(unsubscribed).toBe(1);
  });
});
