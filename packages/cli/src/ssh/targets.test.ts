import { create } from "@bufbuild/protobuf";
import { CertificateAuthoritySchema, TargetSchema, TrustedKeyRole } from "@wap/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDestination } from "../commands/ssh.js";
import { renderSshConfig } from "./ssh-config.js";
import { knownHostsFile, knownHostsName, parseEndpoint } from "./targets.js";

describe("endpoints", () => {
  it("reads ip:port, [v6]:port, bare hosts and bare IPv6, defaulting to port 22", () => {
    expect(parseEndpoint("10.0.0.5:4022")).toEqual({ host: "10.0.0.5", port: 4022 });
    expect(parseEndpoint("[fd00::5]:4022")).toEqual({ host: "fd00::5", port: 4022 });
    expect(parseEndpoint("fd00::5")).toEqual({ host: "fd00::5", port: 22 });
    expect(parseEndpoint("web.internal")).toEqual({ host: "web.internal", port: 22 });
  });

  it("names a host in known_hosts as ssh looks it up, for any host and port", () => {
    const host = fc.oneof(fc.ipV4(), fc.domain());
    fc.assert(
      fc.property(host, fc.integer({ min: 1, max: 65_535 }), (h, port) => {
        const name = knownHostsName({ host: h, port });
        expect(name).toBe(port === 22 ? h : `[${h}]:${port}`);
        expect(parseEndpoint(port === 22 ? `${h}:22` : name)).toEqual({ host: h, port });
      }),
    );
  });
});

describe("known_hosts", () => {
  it("has one @cert-authority line per CA key, for the names of the targets it signs", () => {
    const ca = create(CertificateAuthoritySchema, {
      id: "ca-1",
      publicKey: "ssh-ed25519 AAAAnew",
      trustedKeys: [
        { role: TrustedKeyRole.CURRENT, publicKey: "ssh-ed25519 AAAAnew" },
        { role: TrustedKeyRole.RETIRED, publicKey: "ssh-ed25519 AAAAold retired" },
      ],
    });
    const other = create(CertificateAuthoritySchema, { id: "ca-2", publicKey: "ssh-ed25519 AAAAother" });
    const target = create(TargetSchema, {
      id: "t-1",
      name: "web-01",
      caId: "ca-1",
      endpoints: ["10.0.0.5:4022", "web.internal"],
    });
    const lines = knownHostsFile([ca, other], [target])
      .split("\n")
      .filter((l) => l.startsWith("@"));
    const names = "t-1,web-01,10.0.0.5,[10.0.0.5]:4022,web.internal";
    expect(lines).toEqual([
      `@cert-authority ${names} ssh-ed25519 AAAAnew`,
      `@cert-authority ${names} ssh-ed25519 AAAAold`,
    ]);
  });
});

describe("ssh_config", () => {
  it("escapes % in the hook and quotes values with spaces", () => {
    const text = renderSshConfig(
      [{ aliases: ["web-01", "db-1"], command: "'wap' '--renew-if-under' '50%'" }],
      [{ alias: "web-01", comment: "web", settings: [["IdentityFile", "/home/a b/key"]] }],
    );
    expect(text).toContain(`Match originalhost web-01,db-1 exec "'wap' '--renew-if-under' '50%%'"`);
    expect(text).toContain('Host web-01\n  IdentityFile "/home/a b/key"\n');
  });
});

describe("destinations", () => {
  it("splits login@target at the last @", () => {
    expect(parseDestination("web-01")).toEqual({ login: undefined, target: "web-01" });
    expect(parseDestination("deploy@web-01")).toEqual({ login: "deploy", target: "web-01" });
    expect(parseDestination("a@b@web-01")).toEqual({ login: "a@b", target: "web-01" });
  });
});
