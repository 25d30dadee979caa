/**
 * WorkspaceDomainService against a real DNS server on a loopback port (dns2): claims, the TXT
 * record proof through node's resolver, token regeneration, one verifier per domain, DNS faults.
 */

import { WorkspaceDomainService } from "@wap/api";
import { startTxtDnsServer, type TxtDnsServer } from "@wap/test-kit/txt-dns";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { memberWithRole, type Owner } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

/** The zone the test server answers from: TXT records by name, or a failure for the name. */
const zone = new Map<string, string[][] | "servfail">();
let dns: TxtDnsServer;
const queries: string[] = [];

beforeAll(async () => {
  dns = await startTxtDnsServer((name) => {
    queries.push(name);
    return zone.get(name);
  });
});
afterAll(() => dns?.close());

let t: TestPlatform;
let ada: Owner;
beforeEach(async () => {
  t = await createTestPlatform({ dns: dns.resolver });
  ada = await t.owner();
  zone.clear();
  queries.length = 0;
});
afterEach(() => t.platform.close());

const D = WorkspaceDomainService.method;
const claim = (owner: Owner, domain: string) =>
  t.call(owner.caller, D.createWorkspaceDomain, { workspaceId: owner.workspaceId, domain });
const verify = (owner: Owner, domain: string) =>
  t.call(owner.caller, D.verifyWorkspaceDomain, { workspaceId: owner.workspaceId, domain });

describe("domain claims", () => {
  it("are created once per workspace, listed alphabetically, read by any member, deleted", async () => {
    const { domain } = await claim(ada, "corp.example.com");
    expect(domain).toMatchObject({ domain: "corp.example.com", workspaceId: ada.workspaceId });
    expect(domain?.verificationToken).toMatch(/^wap-domain-verification=[0-9a-f]{32}$/);
    expect(domain?.verifiedAt).toBeUndefined();
    const dup = await expectCode(claim(ada, "corp.example.com"), "already_exists");
    expect(dup.message).toContain("corp.example.com");
    await claim(ada, "a-team.example.com");
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    const { domains } = await t.call(vic.caller, D.listWorkspaceDomains, { workspaceId: ada.workspaceId });
    expect(domains.map((d) => d.domain)).toEqual(["a-team.example.com", "corp.example.com"]);
    // Lookups take any hostname spelling of the claim.
    const got = await t.call(vic.caller, D.getWorkspaceDomain, {
      workspaceId: ada.workspaceId,
      domain: "CORP.Example.com.",
    });
    expect(got.domain?.domain).toBe("corp.example.com");
    await expectCode(
      t.call(vic.caller, D.deleteWorkspaceDomain, {
        workspaceId: ada.workspaceId,
        domain: "corp.example.com",
      }),
      "permission_denied",
    );
    await t.call(ada.caller, D.deleteWorkspaceDomain, {
      workspaceId: ada.workspaceId,
      domain: "corp.example.com",
    });
    await expectCode(
      t.call(ada.caller, D.getWorkspaceDomain, { workspaceId: ada.workspaceId, domain: "corp.example.com" }),
      "not_found",
    );
  });

  it("are verified by a TXT record holding the token, at _wap-challenge.<domain> or the domain", async () => {
    const { domain } = await claim(ada, "corp.example.com");
    const missing = await expectCode(verify(ada, "corp.example.com"), "failed_precondition");
    expect(missing.reason).toBe("DOMAIN_NOT_VERIFIED");
    expect(queries).toEqual(["_wap-challenge.corp.example.com", "corp.example.com"]);
    zone.set("_wap-challenge.corp.example.com", [["v=spf1 -all"], ["wap-domain-verification=0000"]]);
    await expectCode(verify(ada, "corp.example.com"), "failed_precondition");
    // A long value may come split into several strings of one record.
    const token = domain!.verificationToken;
    zone.set("_wap-challenge.corp.example.com", [["v=spf1 -all"], [token.slice(0, 10), token.slice(10)]]);
    const verified = await verify(ada, "corp.example.com");
    expect(verified.domain?.verifiedAt).toBeDefined();
    expect((await t.storage.workspaceDomains.find(ada.workspaceId, "corp.example.com"))?.verifiedAt).toEqual(
      t.clock.now(),
    );

    const { domain: apex } = await claim(ada, "apex.example.org");
    zone.set("apex.example.org", [[apex!.verificationToken]]);
    expect((await verify(ada, "apex.example.org")).domain?.verifiedAt).toBeDefined();
  });

  it("keep their verification when the token is regenerated; the next check needs the new token", async () => {
    const { domain } = await claim(ada, "corp.example.com");
    zone.set("_wap-challenge.corp.example.com", [[domain!.verificationToken]]);
    const first = await verify(ada, "corp.example.com");
    const regenerated = await t.call(ada.caller, D.regenerateWorkspaceDomainToken, {
      workspaceId: ada.workspaceId,
      domain: "corp.example.com",
    });
    expect(regenerated.domain?.verificationToken).not.toBe(domain!.verificationToken);
    expect(regenerated.domain?.verifiedAt).toEqual(first.domain?.verifiedAt);
    await expectCode(verify(ada, "corp.example.com"), "failed_precondition");
    zone.set("_wap-challenge.corp.example.com", [[regenerated.domain!.verificationToken]]);
    t.clock.advance(60_000);
    expect((await verify(ada, "corp.example.com")).domain?.verifiedAt).toEqual(first.domain?.verifiedAt);
  });

  it("may be claimed by several workspaces but verified by only one", async () => {
    const bob = await t.owner();
    const mine = await claim(ada, "shared.example.com");
    const theirs = await claim(bob, "shared.example.com");
    zone.set("_wap-challenge.shared.example.com", [
      [mine.domain!.verificationToken],
      [theirs.domain!.verificationToken],
    ]);
    await verify(ada, "shared.example.com");
    const taken = await expectCode(verify(bob, "shared.example.com"), "already_exists");
    expect(taken.reason).toBe("DOMAIN_VERIFIED_ELSEWHERE");
    expect(
      (await t.storage.workspaceDomains.find(bob.workspaceId, "shared.example.com"))?.verifiedAt,
    ).toBeNull();
  });

  it("report DNS failures as unavailable, not as a missing record", async () => {
    await claim(ada, "broken.example.com");
    zone.set("_wap-challenge.broken.example.com", "servfail");
    const error = await expectCode(verify(ada, "broken.example.com"), "unavailable");
    expect(error.reason).toBe("DNS_UNAVAILABLE");
    expect(
      (await t.storage.workspaceDomains.find(ada.workspaceId, "broken.example.com"))?.verifiedAt,
    ).toBeNull();
  });

  it("check the domain rules: lower-case pattern on create, hostname on lookups", async () => {
    for (const bad of ["Corp.example.com", "corp", "a.b", "corp-.example.com", "corp.example.c0m"]) {
      await expectCode(claim(ada, bad), "invalid_argument");
    }
    for (const bad of ["-corp.example.com", "corp..example.com", "example.123", `${"a".repeat(64)}.com`]) {
      await expectCode(
        t.call(ada.caller, D.getWorkspaceDomain, { workspaceId: ada.workspaceId, domain: bad }),
        "invalid_argument",
      );
    }
  });
});
