import { createMasterKeyStore, generateMasterKey } from "@wap/core";
import { describe, expect, it } from "vitest";
import { createRelayTokenVerifier, mintRelayToken, relayTokenTtlMs } from "./relay-token.js";

const session = "6f1c2b8e-9d3a-4c5e-8f7a-1b2c3d4e5f60";
const now = new Date("2026-08-12T07:17:00Z");

describe("relay tokens", () => {
  const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });

  it("work once, for their session and instance, until they expire", async () => {
    const verifier = createRelayTokenVerifier(keyStore, "instance-a");
    const token = await mintRelayToken(keyStore, { sessionId: session, instanceId: "instance-a" }, now);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await verifier.verify(token, "7f1c2b8e-9d3a-4c5e-8f7a-1b2c3d4e5f60", now)).toBe(false);
    expect(await verifier.verify(token, session, now)).toBe(true);
    expect(await verifier.verify(token, session, now)).toBe(false);

    const late = await mintRelayToken(keyStore, { sessionId: session, instanceId: "instance-a" }, now);
    expect(await verifier.verify(late, session, new Date(now.getTime() + relayTokenTtlMs))).toBe(false);
  });

  it("are refused by another instance, under another master key, or when tampered with", async () => {
    const token = await mintRelayToken(keyStore, { sessionId: session, instanceId: "instance-a" }, now);
    expect(await createRelayTokenVerifier(keyStore, "instance-b").verify(token, session, now)).toBe(false);
    const otherKey = createMasterKeyStore({ masterKey: generateMasterKey() });
    expect(await createRelayTokenVerifier(otherKey, "instance-a").verify(token, session, now)).toBe(false);
    const bytes = Buffer.from(token, "base64url");
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    const tampered = bytes.toString("base64url");
    const verifier = createRelayTokenVerifier(keyStore, "instance-a");
    expect(await verifier.verify(tampered, session, now)).toBe(false);
    expect(await verifier.verify("not a token!", session, now)).toBe(false);
    expect(await verifier.verify(token, session, now)).toBe(true);
  });
});
