/**
 * Durations and timestamps as clients write them, through the running server on SQLite and on
 * PostgreSQL: every duration field of the contract either round-trips exactly (whole seconds,
 * with or without a zero fraction) or is refused with `invalid_argument` naming the field and
 * changing nothing; impossible timestamps are refused instead of moved; decode errors name the
 * field and the form expected; a fraction an earlier release stored is repaired on upgrade.
 */
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createArgon2PasswordHasher } from "@wap/core";
import { createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { connectCall, type JsonResponse, restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { noRateLimit, startTestServer, type TestServer } from "@wap/test-kit/server";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJsonLogger, createServer } from "../src/index.js";

const runs = Number(process.env.WAP_DURATION_RUNS ?? 6);

/** A duration as a client may write it: whole seconds and 0 to 9 fractional digits. */
function durationText(bounds: { min: number; max: number }) {
  return fc
    .tuple(
      fc.integer(bounds),
      fc.oneof(fc.constant(""), fc.constantFrom("0", "000", "000000000"), fc.stringMatching(/^[0-9]{1,9}$/)),
    )
    .map(([seconds, fraction]) => ({
      text: fraction === "" ? `${seconds}s` : `${seconds}.${fraction}s`,
      whole: /^0*$/.test(fraction),
      canonical: `${seconds}s`,
    }));
}

const ttlBounds = { min: 60, max: 31_536_000 };
const lifetimeBounds = { min: 2_628_000, max: 315_360_000 };
const expiryBounds = { min: 300, max: 2_592_000 };

/** The certificate authority fields: each with the partner that keeps default <= max. */
const caFields: ReadonlyArray<{ field: string; bounds: typeof ttlBounds; partner: Record<string, string> }> =
  [
    { field: "lifetime", bounds: lifetimeBounds, partner: {} },
    { field: "userDefaultTtl", bounds: ttlBounds, partner: { userMaxTtl: "31536000s" } },
    { field: "userMaxTtl", bounds: ttlBounds, partner: { userDefaultTtl: "60s" } },
    { field: "hostDefaultTtl", bounds: ttlBounds, partner: { hostMaxTtl: "31536000s" } },
    { field: "hostMaxTtl", bounds: ttlBounds, partner: { hostDefaultTtl: "60s" } },
  ];

function expectRefused(res: JsonResponse, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  const code = res.body.code;
  expect(code === "invalid_argument" || code === 3).toBe(true);
  expect(res.body.message).toContain(field);
  expect(JSON.stringify(res.body)).not.toContain("RangeError");
}

function sshPublicKey(): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x ?? "", "base64url");
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  return `ssh-ed25519 ${Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]).toString("base64")} t@test`;
}

async function x509Csr(dir: string, commonName: string): Promise<string> {
  const key = join(dir, "csr.key");
  execFileSync("openssl", ["genpkey", "-algorithm", "ed25519", "-out", key]);
  return execFileSync("openssl", ["req", "-new", "-key", key, "-subj", `/CN=${commonName}`], {
    encoding: "utf8",
  });
}

let pg: TestPostgres;
const servers: Record<string, TestServer> = {};

beforeAll(async () => {
  pg = await startTestPostgres();
  servers.sqlite = await startTestServer();
  servers.postgres = await startTestServer({
    storage: await createPostgresStorage({ connectionString: await pg.freshSchema() }),
  });
}, 120_000);

afterAll(async () => {
  for (const server of Object.values(servers)) await server.close();
  await pg?.stop();
}, 60_000);

for (const adapter of ["sqlite", "postgres"] as const) {
  describe(`durations on ${adapter}`, () => {
    let url: string;
    let token: string;
    let ws: string;
    let n = 0;
    const cas = () => `/v1/workspaces/${ws}/certificate_authorities`;
    const createCa = (extra: Record<string, unknown>) =>
      connectCall(
        url,
        "platform.v1.CertificateService/CreateCertificateAuthority",
        { workspaceId: ws, name: `ca-${adapter}-${++n}`, keyType: "CERTIFICATE_KEY_TYPE_ED25519", ...extra },
        { token },
      );

    beforeAll(async () => {
      url = servers[adapter]!.url;
      const owner = await signUpWithWorkspace(url, `dur${adapter}`);
      token = owner.accessToken;
      ws = owner.workspaceId;
    });

    it("certificate authority durations round-trip through create, get and list, or are refused", async () => {
      for (const { field, bounds, partner } of caFields) {
        await fc.assert(
          fc.asyncProperty(durationText(bounds), async (d) => {
            const before = await restCall(url, "GET", cas(), undefined, { token });
            const res = await createCa({ ...partner, [field]: d.text });
            if (!d.whole) {
              expectRefused(res, field);
              const after = await restCall(url, "GET", cas(), undefined, { token });
              expect(after.body.certificateAuthorities ?? []).toEqual(
                before.body.certificateAuthorities ?? [],
              );
              return;
            }
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            const id = res.body.certificateAuthority.id as string;
            expect(res.body.certificateAuthority[field]).toBe(d.canonical);
            const got = await restCall(url, "GET", `${cas()}/${id}`, undefined, { token });
            expect(got.status).toBe(200);
            expect(got.body.certificateAuthority[field]).toBe(d.canonical);
            const list = await restCall(url, "GET", cas(), undefined, { token });
            expect(list.status).toBe(200);
            const listed = list.body.certificateAuthorities.find((ca: { id: string }) => ca.id === id);
            expect(listed[field]).toBe(d.canonical);
          }),
          { numRuns: runs },
        );
      }
    });

    it("certificate authority durations round-trip through update, or are refused and change nothing", async () => {
      const created = await createCa({});
      expect(created.status).toBe(200);
      const id = created.body.certificateAuthority.id as string;
      for (const { field, bounds, partner } of caFields) {
        await fc.assert(
          fc.asyncProperty(durationText(bounds), async (d) => {
            const before = await restCall(url, "GET", `${cas()}/${id}`, undefined, { token });
            const res = await restCall(
              url,
              "PATCH",
              `${cas()}/${id}`,
              { ...partner, [field]: d.text },
              { token },
            );
            const after = await restCall(url, "GET", `${cas()}/${id}`, undefined, { token });
            if (!d.whole) {
              expectRefused(res, field);
              expect(after.body).toEqual(before.body);
              return;
            }
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            expect(after.body.certificateAuthority[field]).toBe(d.canonical);
          }),
          { numRuns: runs },
        );
      }
    });

    // The expiries are not echoed (WorkspaceSettings shows the tokens' expiry times): whole
    // seconds are taken as they are, fractions refused without a change.
    it("workspace token expiries are taken in whole seconds, or refused and nothing changes", async () => {
      for (const field of ["enrollExpiry", "inviteExpiry"]) {
        await fc.assert(
          fc.asyncProperty(durationText(expiryBounds), async (d) => {
            const before = await restCall(url, "GET", `/v1/workspaces/${ws}`, undefined, { token });
            const res = await restCall(
              url,
              "PATCH",
              `/v1/workspaces/${ws}/settings`,
              { [field]: d.text },
              { token },
            );
            const after = await restCall(url, "GET", `/v1/workspaces/${ws}`, undefined, { token });
            if (!d.whole) {
              expectRefused(res, field);
              expect(after.body).toEqual(before.body);
              return;
            }
            expect(res.status, JSON.stringify(res.body)).toBe(200);
          }),
          { numRuns: runs },
        );
      }
    });

    it("certificate TTLs of SignSSHCertificate and SignX509Certificate are whole seconds", async () => {
      const ssh = await createCa({});
      const x509 = await createCa({
        authorityType: "AUTHORITY_TYPE_X509",
        keyType: "CERTIFICATE_KEY_TYPE_ECDSA",
      });
      expect(x509.status, JSON.stringify(x509.body)).toBe(200);
      const dir = await mkdtemp(join(tmpdir(), "wap-csr-"));
      const me = await restCall(url, "GET", "/v1/whoami", undefined, { token });
      const csr = await x509Csr(dir, me.body.user.id);
      await rm(dir, { recursive: true, force: true });
      const small = { min: 60, max: 3600 };
      await fc.assert(
        fc.asyncProperty(durationText(small), async (d) => {
          const signed = await restCall(
            url,
            "POST",
            `/v1/workspaces/${ws}/sign-ssh`,
            {
              caId: ssh.body.certificateAuthority.id,
              publicKey: sshPublicKey(),
              ttl: d.text,
              type: "CERTIFICATE_TYPE_USER",
            },
            { token },
          );
          const x = await restCall(
            url,
            "POST",
            `/v1/workspaces/${ws}/sign-x509`,
            { caId: x509.body.certificateAuthority.id, csr, ttl: d.text, usage: "X509_USAGE_CLIENT_AUTH" },
            { token },
          );
          if (d.whole) {
            expect(signed.status, JSON.stringify(signed.body)).toBe(200);
            expect(x.status, JSON.stringify(x.body)).toBe(200);
          } else {
            expectRefused(signed, "ttl");
            expectRefused(x, "ttl");
          }
        }),
        { numRuns: runs },
      );
    });
  });
}

describe("timestamps and decode errors", () => {
  let url: string;
  let token: string;
  let ws: string;
  beforeAll(async () => {
    url = servers.sqlite!.url;
    const owner = await signUpWithWorkspace(url, "stamps");
    token = owner.accessToken;
    ws = owner.workspaceId;
  });

  /** Dates that do not exist, as RFC 3339 strings, with the reason they must not be moved. */
  const impossible = fc.oneof(
    // Day past the end of its month (non-leap February, 30-day months).
    fc
      .record({ year: fc.integer({ min: 2027, max: 2399 }), month: fc.integer({ min: 1, max: 12 }) })
      .filter(({ year }) => year % 4 !== 0)
      .map(({ year, month }) => {
        const days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
        return `${year}-${String(month).padStart(2, "0")}-${days + 1}T12:00:00Z`;
      }),
    fc.integer({ min: 24, max: 99 }).map((h) => `2030-01-15T${h}:00:00Z`),
    fc.integer({ min: 60, max: 99 }).map((m) => `2030-01-15T12:${m}:00Z`),
    fc.integer({ min: 60, max: 99 }).map((s) => `2030-01-15T12:00:${s}Z`),
    fc.constantFrom(
      "2030-02-29T12:00:00Z",
      "2030-04-31T00:00:00Z",
      "2030-01-15T12:00:00.1234567890Z",
      "2030-01-15 12:00:00Z",
      "2030-13-01T00:00:00Z",
      "0000-01-01T00:00:00Z",
      "2030-01-15T12:00:00+24:00",
    ),
  );

  /** Real dates, including 29 February of leap years and offsets. */
  const possible = fc
    .record({
      at: fc.date({
        min: new Date("2027-01-01T00:00:00Z"),
        max: new Date("2099-12-31T23:59:59Z"),
        noInvalidDate: true,
      }),
      digits: fc.integer({ min: 0, max: 9 }),
    })
    .map(({ at, digits }) => {
      const base = at.toISOString().slice(0, 19);
      return digits === 0 ? `${base}Z` : `${base}.${"5".repeat(digits)}Z`;
    });

  it("CreateServiceAccount refuses impossible expiry dates on Connect and REST, and creates nothing", async () => {
    await fc.assert(
      fc.asyncProperty(impossible, async (expiresAt) => {
        const before = await restCall(url, "GET", `/v1/workspaces/${ws}/service_accounts`, undefined, {
          token,
        });
        const viaConnect = await connectCall(
          url,
          "platform.v1.ServiceAccountService/CreateServiceAccount",
          { workspaceId: ws, name: "sa", expiresAt },
          { token },
        );
        expectRefused(viaConnect, "expiresAt");
        expect(viaConnect.body.message).toContain("RFC 3339");
        const viaRest = await restCall(
          url,
          "POST",
          `/v1/workspaces/${ws}/service_accounts`,
          { name: "sa", expiresAt },
          { token },
        );
        expectRefused(viaRest, "expiresAt");
        const after = await restCall(url, "GET", `/v1/workspaces/${ws}/service_accounts`, undefined, {
          token,
        });
        expect(after.body).toEqual(before.body);
      }),
      { numRuns: 25 },
    );
  });

  it("real dates are accepted and kept as sent", async () => {
    let i = 0;
    await fc.assert(
      fc.asyncProperty(possible, async (expiresAt) => {
        const res = await connectCall(
          url,
          "platform.v1.ServiceAccountService/CreateServiceAccount",
          { workspaceId: ws, name: `real-${++i}`, expiresAt },
          { token },
        );
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(Date.parse(res.body.serviceAccount.expiresAt)).toBe(
          Date.parse(expiresAt.replace(/(\.\d{3})\d*Z$/, "$1Z")),
        );
      }),
      { numRuns: 10 },
    );
    const leap = await connectCall(
      url,
      "platform.v1.ServiceAccountService/CreateServiceAccount",
      { workspaceId: ws, name: "leap-day", expiresAt: "2032-02-29T12:00:00Z" },
      { token },
    );
    expect(leap.status).toBe(200);
    expect(leap.body.serviceAccount.expiresAt).toBe("2032-02-29T12:00:00Z");
  });

  it("a duration that is not one names the field and the form, on every path", async () => {
    const ca = await connectCall(
      url,
      "platform.v1.CertificateService/CreateCertificateAuthority",
      { workspaceId: ws, name: "decode", keyType: "CERTIFICATE_KEY_TYPE_ED25519" },
      { token },
    );
    const body = { caId: ca.body.certificateAuthority.id, publicKey: sshPublicKey(), ttl: "1h" };
    const expected = 'ttl: expected a duration in seconds such as "3600s"';
    const lean = await connectCall(
      url,
      "platform.v1.CertificateService/SignSSHCertificate",
      { workspaceId: ws, ...body },
      { token },
    );
    // With a deadline the call goes through connect-node instead of the lean path.
    const general = await connectCall(
      url,
      "platform.v1.CertificateService/SignSSHCertificate",
      { workspaceId: ws, ...body },
      { token, headers: { "connect-timeout-ms": "10000" } },
    );
    const rest = await restCall(url, "POST", `/v1/workspaces/${ws}/sign-ssh`, body, { token });
    for (const res of [lean, general, rest]) {
      expectRefused(res, expected);
      expect(JSON.stringify(res.body.details)).toContain("BadRequest");
    }
    expect(lean.body).toEqual(general.body);
  });

  it("an unknown enum value lists the valid ones", async () => {
    const res = await connectCall(
      url,
      "platform.v1.CertificateService/CreateCertificateAuthority",
      { workspaceId: ws, name: "enum", keyType: "CERTIFICATE_KEY_TYPE_DSA" },
      { token },
    );
    expectRefused(res, "keyType: expected one of CERTIFICATE_KEY_TYPE_UNSPECIFIED, CERTIFICATE_KEY_TYPE_RSA");
    expect(res.body.message).toContain('(got "CERTIFICATE_KEY_TYPE_DSA")');
  });
});

describe("upgrade repair", () => {
  it("a fraction an earlier release stored in SQLite is cut to whole seconds, never a 500", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "wap-repair-"));
    const start = () =>
      createServer({
        host: "127.0.0.1",
        port: 0,
        dataDir,
        rateLimit: noRateLimit,
        logger: createJsonLogger("error", () => {}),
        platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
      });
    try {
      let server = await start();
      const owner = await signUpWithWorkspace(server.url, "repair");
      const created = await connectCall(
        server.url,
        "platform.v1.CertificateService/CreateCertificateAuthority",
        { workspaceId: owner.workspaceId, name: "old", keyType: "CERTIFICATE_KEY_TYPE_ED25519" },
        { token: owner.accessToken },
      );
      const id = created.body.certificateAuthority.id as string;
      await server.close();
      // What an earlier release wrote for "userDefaultTtl": "3600.5s", before this repair ran.
      const db = join(dataDir, "wap.db");
      const script = join(dataDir, "old.sql");
      await writeFile(
        script,
        `update certificate_authorities set user_default_ttl_seconds = 3600.5, host_max_ttl_seconds = 7200.25 where id = '${id}';
         alter table targets drop column reported_endpoints;
         delete from wap_schema_migration where name >= '012_whole_second_durations';
         drop table audit_chain_heads; drop table audit_checkpoints; drop table audit_signing_keys;
         drop index audit_events_chain_key; alter table audit_events drop column chain_position;
         alter table audit_events drop column previous_hash; alter table audit_events drop column hash;
         drop table webhook_deliveries; drop table webhook_secrets; drop table webhook_endpoints;
         drop table ssh_sessions; alter table daemons drop column require_recording;
         drop table access_requests; drop index principal_subjects_valid_until_idx;
         alter table principal_subjects drop column grant_kind; alter table principal_subjects drop column valid_until;
         alter table principal_subjects drop column approval_policy;
         alter table principal_subjects drop column limits; alter table issued_certificates drop column limits; alter table issued_certificates drop column single_use;
         drop table ssh_step_up_certificates; drop table ssh_step_ups; alter table issued_certificates drop column step_up_id;`,
      );
      execFileSync("sqlite3", [db, `.read ${script}`]);
      server = await start();
      try {
        const login = await restCall(server.url, "POST", "/v1/login", {
          email: owner.email,
          password: owner.password,
        });
        const got = await restCall(
          server.url,
          "GET",
          `/v1/workspaces/${owner.workspaceId}/certificate_authorities/${id}`,
          undefined,
          { token: login.body.accessToken },
        );
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        expect(got.body.certificateAuthority.userDefaultTtl).toBe("3600s");
        expect(got.body.certificateAuthority.hostMaxTtl).toBe("7200s");
      } finally {
        await server.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
