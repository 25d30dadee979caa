/**
 * WebhookService over real SQLite: who may manage endpoints, bad input refused with the field
 * named and nothing changed, the rotation's overlap, replay bounds, and secrets that survive a
 * rotation of the master key. (Delivery itself, with a real receiver, is in the server's tests.)
 */
import { WebhookService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { resealSecrets } from "../src/platform/reseal-secrets.js";
import { webhookSecretContext } from "../src/webhooks/secrets.js";
import { memberWithRole, type Owner } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const Hook = WebhookService.method;
const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
let t: TestPlatform;
let ada: Owner;

beforeEach(async () => {
  // Nothing is delivered here: endpoints point at documentation addresses.
  t = await createTestPlatform({ keyStore, webhooks: { deliver: false } });
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const create = (request: Record<string, unknown> = {}) =>
  t.call(ada.caller, Hook.createWebhookEndpoint, {
    workspaceId: ada.workspaceId,
    url: "https://192.0.2.1/hooks",
    ...request,
  });

describe("webhook endpoints", () => {
  it("are for owners and admins: editors and viewers are refused, and see none", async () => {
    const { endpoint } = await create();
    const admin = await memberWithRole(t, ada.workspaceId, "admin");
    const listed = await t.call(admin.caller, Hook.listWebhookEndpoints, { workspaceId: ada.workspaceId });
    expect(listed.endpoints.map((e) => e.id)).toEqual([endpoint!.id]);
    for (const role of ["editor", "viewer"] as const) {
      const member = await memberWithRole(t, ada.workspaceId, role);
      await expectCode(
        t.call(member.caller, Hook.listWebhookEndpoints, { workspaceId: ada.workspaceId }),
        "permission_denied",
      );
      await expectCode(
        t.call(member.caller, Hook.createWebhookEndpoint, {
          workspaceId: ada.workspaceId,
          url: "https://192.0.2.1/x",
        }),
        "permission_denied",
      );
    }
  });

  it("refuse bad input naming the field and the form, and change nothing", async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ url: "" }, "url", /1 to 2048 characters/],
      [{ url: undefined }, "url", /required|must be sent/],
      [{ url: "http://192.0.2.1/" }, "url", /must be an https URL/],
      [{ url: "javascript:alert(1)" }, "url", /https URL/],
      [{ url: `https://example.com/${"a".repeat(2048)}` }, "url", /1 to 2048 characters \(got 2068\)/],
      [{ description: "x\u001b[31m" }, "description", /control characters/],
      [{ eventTypes: ["team.create", "*"] }, "eventTypes.1", /audit action/],
      [{ eventTypes: Array.from({ length: 51 }, () => "team.create") }, "eventTypes", /at most 50/],
    ];
    for (const [request, field, description] of cases) {
      const error = await expectCode(create(request), "invalid_argument");
      expect(error.violations?.[0]?.field, JSON.stringify(request)).toBe(field);
      expect(error.violations?.[0]?.description).toMatch(description);
    }
    const { endpoint } = await create();
    await expectCode(
      t.call(ada.caller, Hook.updateWebhookEndpoint, {
        workspaceId: ada.workspaceId,
        id: endpoint!.id,
        eventTypes: ["team.create"],
        allEventTypes: true,
      }),
      "invalid_argument",
    );
    await expectCode(
      t.call(ada.caller, Hook.replayWebhookEvents, {
        workspaceId: ada.workspaceId,
        id: endpoint!.id,
        fromSequence: 10_000n,
      }),
      "out_of_range",
    );
    const listed = await t.call(ada.caller, Hook.listWebhookEndpoints, { workspaceId: ada.workspaceId });
    expect(listed.endpoints).toHaveLength(1);
    expect(listed.endpoints[0]).toMatchObject({
      eventTypes: [],
      deliveredSequence: endpoint!.deliveredSequence,
    });
  });

  it("rotate with a day's overlap by default, and end the previous secret at once with none", async () => {
    const { endpoint } = await create();
    const start = t.clock.now().getTime();
    const rotated = await t.call(ada.caller, Hook.rotateWebhookSecret, {
      workspaceId: ada.workspaceId,
      id: endpoint!.id,
    });
    const until = rotated.endpoint!.previousSecretExpiresAt!;
    expect(Number(until.seconds) * 1000 - start).toBe(86_400_000);
    const now = await t.call(ada.caller, Hook.rotateWebhookSecret, {
      workspaceId: ada.workspaceId,
      id: endpoint!.id,
      overlap: { seconds: 0n, nanos: 0 },
    });
    expect(now.endpoint!.previousSecretExpiresAt).toBeUndefined();
    const live = await t.storage.webhookEndpoints.secrets(ada.workspaceId, endpoint!.id, t.clock.now());
    expect(live.map((s) => s.version)).toEqual([3]);
    await expectCode(
      t.call(ada.caller, Hook.rotateWebhookSecret, {
        workspaceId: ada.workspaceId,
        id: endpoint!.id,
        overlap: { seconds: 7n * 86_400n + 1n, nanos: 0 },
      }),
      "invalid_argument",
    );
  });

  it("keep their secrets through a rotation of the master key", async () => {
    const { endpoint, secret } = await create();
    const next = createMasterKeyStore({ masterKey: generateMasterKey() });
    const { resealed } = await resealSecrets(t.storage, keyStore, next);
    expect(resealed.webhook_secret).toBe(1);
    const [stored] = await t.storage.webhookEndpoints.secrets(ada.workspaceId, endpoint!.id, t.clock.now());
    const opened = await next.open(stored!.sealed, webhookSecretContext(endpoint!.id, 1));
    expect(Buffer.from(opened).toString("base64")).toBe(secret!.slice("whsec_".length));
  });
});
