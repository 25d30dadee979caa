/**
 * The bounds of webhook delivery, as properties: the backoff stays within its window and never
 * shrinks on average, bodies stay under their cap whatever the entry holds, event types match
 * exactly what their pattern says, and signatures have the Standard Webhooks form.
 */
import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChainedAuditEventRecord } from "../storage/audit.js";
import { retryDelayMs } from "./backoff.js";
import { eventType, eventTypeMatches, eventTypes, maxEventTypes } from "./event-types.js";
import { webhookSettings } from "./options.js";
import { eventBody, maxEventFieldChars, maxWebhookBodyBytes } from "./payload.js";
import { webhookSecretBytes, webhookSecretText } from "./secrets.js";
import { webhookSignatureHeader } from "./signature.js";

const anyText = fc.string({ unit: "grapheme", maxLength: 3000 });
const hostileText = fc.oneof(
  anyText,
  fc.string({
    unit: fc.constantFrom("\u0000", "\u001b", '"', "\\", "\ud83d\ude00", "é", "\u2028"),
    maxLength: 3000,
  }),
);

describe("retry backoff", () => {
  it("waits between half and all of min(max, base × 2^(n-1)), and never past max", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (failures, baseMs, extra, draw) => {
          const maxMs = baseMs + extra;
          const delay = retryDelayMs(failures, { baseMs, maxMs }, draw);
          const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 40));
          expect(delay).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
          expect(delay).toBeLessThanOrEqual(ceiling);
          expect(delay).toBeLessThanOrEqual(maxMs);
        },
      ),
    );
  });

  it("grows with the failures until it reaches its cap (same jitter)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (n, draw) => {
          const backoff = { baseMs: 5_000, maxMs: 600_000 };
          expect(retryDelayMs(n + 1, backoff, draw)).toBeGreaterThanOrEqual(retryDelayMs(n, backoff, draw));
        },
      ),
    );
  });

  it("defaults to 5 s doubling up to 10 minutes", () => {
    const settings = webhookSettings({ pollMs: undefined });
    expect(settings).toMatchObject({ retryBaseMs: 5_000, retryMaxMs: 600_000, requestTimeoutMs: 10_000 });
  });
});

describe("message bodies", () => {
  const entry = fc.record({
    actorType: hostileText,
    actorId: hostileText,
    action: hostileText,
    resource: hostileText,
    ipAddress: hostileText,
    userAgent: hostileText,
    statusCode: hostileText,
    requestId: hostileText,
  });

  it(`stay under ${maxWebhookBodyBytes} bytes and name the fields they cut`, () => {
    fc.assert(
      fc.property(entry, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (fields, position) => {
        const record: ChainedAuditEventRecord = {
          ...fields,
          id: "01a22353-fd1f-75b7-8d5f-46e93aa6413b",
          workspaceId: "5f1c0000-0000-4000-8000-000000000000",
          timestamp: new Date(Date.UTC(2026, 10, 28)),
          position,
          previousHash: new Uint8Array(32),
          hash: new Uint8Array(32).fill(255),
        };
        const body = eventBody(record);
        expect(Buffer.byteLength(body)).toBeLessThanOrEqual(maxWebhookBodyBytes);
        const parsed = JSON.parse(body);
        expect(parsed.data.sequence).toBe(position);
        for (const [name, value] of Object.entries(fields)) {
          const sent = parsed.data[name] as string;
          if (value.length <= maxEventFieldChars) expect(sent).toBe(value);
          else {
            expect(parsed.data.truncated).toContain(name);
            expect(value.startsWith(sent)).toBe(true);
            expect(sent.length).toBeGreaterThanOrEqual(maxEventFieldChars - 1);
          }
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe("event types", () => {
  const segment = fc.stringMatching(/^[a-z_]{1,12}$/);
  const action = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("."));

  it("accept audit actions and prefixes ending in .*, within 1 to 100 characters", () => {
    fc.assert(
      fc.property(action, fc.boolean(), (name, prefix) => {
        const type = prefix ? `${name}.*` : name;
        expect(eventType.safeParse(type).success).toBe(type.length <= 100);
      }),
    );
    for (const bad of ["", "Team.create", "team..create", "team.*.x", "*", "team.create ", "x".repeat(101)]) {
      expect(eventType.safeParse(bad).success, bad).toBe(false);
    }
  });

  it(`accept at most ${maxEventTypes}`, () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 120 }), (n) => {
        expect(eventTypes.safeParse(Array.from({ length: n }, () => "team.create")).success).toBe(
          n <= maxEventTypes,
        );
      }),
    );
  });

  it("match an action exactly, or every action under a prefix; none: everything", () => {
    fc.assert(
      fc.property(action, action, (a, b) => {
        expect(eventTypeMatches([], a)).toBe(true);
        expect(eventTypeMatches([a], b)).toBe(a === b);
        expect(eventTypeMatches([`${a}.*`], `${a}.${b}`)).toBe(true);
        // A prefix matches whole segments only: `team.*` is not `teams.create`.
        expect(eventTypeMatches([`${a}.*`], `${a}x.${b}`)).toBe(false);
      }),
    );
  });
});

describe("signatures", () => {
  it("are v1,<base64 HMAC-SHA256 of id.timestamp.body> per key, newest first", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: webhookSecretBytes, maxLength: webhookSecretBytes }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.uuid(),
        fc.integer({ min: 0, max: 2 ** 40 }),
        anyText,
        (keys, id, timestamp, body) => {
          const header = webhookSignatureHeader(keys, id, timestamp, body);
          const parts = header.split(" ");
          expect(parts).toHaveLength(keys.length);
          parts.forEach((part, i) => {
            expect(part).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
            const mac = createHmac("sha256", keys[i]!).update(`${id}.${timestamp}.${body}`).digest("base64");
            expect(part).toBe(`v1,${mac}`);
          });
        },
      ),
    );
  });

  it("secrets are whsec_ and the base64 of their 32 bytes", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: webhookSecretBytes, maxLength: webhookSecretBytes }),
        (bytes) => {
          const text = webhookSecretText(bytes);
          expect(text).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
          expect(new Uint8Array(Buffer.from(text.slice(6), "base64"))).toEqual(bytes);
        },
      ),
    );
  });
});
