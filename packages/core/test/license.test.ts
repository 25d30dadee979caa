/**
 * LicenseService.GetLicense over offline Ed25519 licences: none (free plan), valid, expired,
 * and every way a licence can be invalid, reported and never thrown.
 */
import { generateKeyPairSync } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { LicenseService } from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectLicense, licensePrefix, signLicense } from "../src/license/license.js";
import { useIntegrations } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const vendor = generateKeyPairSync("ed25519");
const stranger = generateKeyPairSync("ed25519");
const vendorPublicPem = vendor.publicKey.export({ type: "spki", format: "pem" }).toString();
const now = new Date("2026-11-21T12:00:00Z");
const day = 86_400_000;

const payload = (overrides: Partial<Parameters<typeof signLicense>[0]> = {}) => ({
  id: "lic_0001",
  licensee: "Acme Corp ✓",
  plan: "enterprise",
  issuedAt: new Date(now.getTime() - 30 * day),
  expiresAt: new Date(now.getTime() + 335 * day),
  ...overrides,
});

describe("inspectLicense", () => {
  const keys = { publicKeys: [vendorPublicPem] };

  it("no licence (absent, blank or comments only) is the free plan, active, without expiry", () => {
    for (const license of [undefined, "", "  \n\n", "# just a comment\n"]) {
      expect(inspectLicense({ ...keys, ...(license === undefined ? {} : { license }) }, now)).toEqual({
        state: "none",
        plan: "free",
        active: true,
      });
    }
  });

  it("a licence signed by a trusted key is valid until it expires, then expired", () => {
    const token = signLicense(payload(), vendor.privateKey);
    const file = `# Workspace Access Platform licence for Acme\n\n${token}\n`;
    const valid = inspectLicense({ ...keys, license: file }, now);
    expect(valid).toMatchObject({ state: "valid", plan: "enterprise", active: true });
    const expiresAt = payload().expiresAt;
    expect(inspectLicense({ ...keys, license: file }, new Date(expiresAt.getTime() - 1)).state).toBe("valid");
    expect(inspectLicense({ ...keys, license: file }, expiresAt)).toMatchObject({
      state: "expired",
      plan: "enterprise",
      active: false,
    });
  });

  it("accepts a licence issued a little in the future (issuer clock skew), not an hour ahead", () => {
    const soon = signLicense(payload({ issuedAt: new Date(now.getTime() + 60_000) }), vendor.privateKey);
    expect(inspectLicense({ ...keys, license: soon }, now).state).toBe("valid");
    const later = signLicense(payload({ issuedAt: new Date(now.getTime() + 3_600_000) }), vendor.privateKey);
    expect(inspectLicense({ ...keys, license: later }, now)).toMatchObject({
      state: "invalid",
      active: false,
    });
  });

  it("reports a licence signed by an unknown key, or with no key configured, as invalid", () => {
    const token = signLicense(payload(), stranger.privateKey);
    expect(inspectLicense({ ...keys, license: token }, now)).toMatchObject({
      state: "invalid",
      plan: "invalid",
      active: false,
      reason: "the signature does not match any trusted licence key",
    });
    const good = signLicense(payload(), vendor.privateKey);
    expect(inspectLicense({ license: good }, now)).toMatchObject({ state: "invalid" });
    expect(inspectLicense({ license: good, publicKeys: ["not a key"] }, now)).toMatchObject({
      state: "invalid",
    });
  });

  it("any change to a signed licence makes it invalid; arbitrary text never throws", () => {
    const token = signLicense(payload(), vendor.privateKey);
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(..."AQgw-_x."), (index, char) => {
        fc.pre(token[index] !== char);
        const tampered = token.slice(0, index) + char + token.slice(index + 1);
        expect(inspectLicense({ ...keys, license: tampered }, now).state).toBe("invalid");
      }),
      { numRuns: 200 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        const status = inspectLicense({ ...keys, license: `${licensePrefix}.${text}` }, now);
        expect(["invalid", "none"]).toContain(status.state);
      }),
      { numRuns: 200 },
    );
  });

  it("a correctly signed payload with a bad plan or times is invalid", () => {
    for (const bad of [
      payload({ plan: "Enterprise Plus" }),
      payload({ plan: "" }),
      payload({ expiresAt: new Date(now.getTime() - 40 * day) }),
    ]) {
      expect(inspectLicense({ ...keys, license: signLicense(bad, vendor.privateKey) }, now).state).toBe(
        "invalid",
      );
    }
  });
});

describe("GetLicense", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await createTestPlatform();
  });
  afterAll(() => t.platform.close());

  it("needs credentials", async () => {
    await expectCode(t.call({ kind: "anonymous" }, LicenseService.method.getLicense, {}), "unauthenticated");
  });

  it("answers the free plan without a licence, the plan and expiry with one, active false when expired or invalid", async () => {
    const { caller } = await t.signUp();
    const get = () => t.call(caller, LicenseService.method.getLicense, {});
    useIntegrations(t.platform, { license: { publicKeys: [vendorPublicPem] } });
    const none = await get();
    expect(none.plan).toBe("free");
    expect(none.active).toBe(true);
    expect(none.expiresAt).toBeUndefined();

    const token = signLicense(payload(), vendor.privateKey);
    useIntegrations(t.platform, { license: { publicKeys: [vendorPublicPem], license: token } });
    const valid = await get();
    expect(valid.plan).toBe("enterprise");
    expect(valid.active).toBe(true);
    expect(timestampDate(valid.expiresAt!)).toEqual(payload().expiresAt);

    t.clock.set(new Date(payload().expiresAt.getTime() + 1));
    const expired = await get();
    expect([expired.plan, expired.active]).toEqual(["enterprise", false]);
    t.clock.set(now);

    useIntegrations(t.platform, { license: { publicKeys: [vendorPublicPem], license: `${token}x` } });
    const invalid = await get();
    expect([invalid.plan, invalid.active, invalid.expiresAt]).toEqual(["invalid", false, undefined]);
  });
});
