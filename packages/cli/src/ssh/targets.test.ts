import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { create } from "@bufbuild/protobuf";
import {
  CertificateAuthoritySchema,
  TargetSchema,
  TrustedKeyRole,
  type Workspace,
  WorkspaceSchema,
} from "@wap/api";
import { hasControlCharacters } from "@wap/ssh-wire/forms";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Reachable } from "../access.js";
import { aliasesFor, configProblem, hostBlock } from "../commands/config-ssh.js";
import { parseDestination } from "../commands/ssh.js";
import type { ConfigStore } from "../config.js";
import { certificatePaths } from "./certificate-files.js";
import { sshArguments } from "./run-ssh.js";
import { renderSshConfig } from "./ssh-config.js";
import { endpointOf, knownHostsFile, knownHostsName, knownHostsPath, targetProblem } from "./targets.js";

const run = promisify(execFile);
let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "wap-ssh-files-"));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

const hostileWorkspaceName = (marker: string) => `x\nHost *\n  ProxyCommand touch ${marker}\n#`;

describe("endpoints", () => {
  it("reads ip:port, [v6]:port, bare hosts and bare IPv6, defaulting to port 22", () => {
    expect(endpointOf("10.0.0.5:4022")).toEqual({ host: "10.0.0.5", port: 4022 });
    expect(endpointOf("[fd00::5]:4022")).toEqual({ host: "fd00::5", port: 4022 });
    expect(endpointOf("fd00::5")).toEqual({ host: "fd00::5", port: 22 });
    expect(endpointOf("web.internal")).toEqual({ host: "web.internal", port: 22 });
  });

  it("refuses what is no host name or IP address with a port, ssh options first", () => {
    for (const bad of ["-oProxyCommand=touch /tmp/x", "-p", "web 01", "web%h", "*", "web,db", "a\nb", ""])
      expect(endpointOf(bad), bad).toBeUndefined();
  });

  it("names a host in known_hosts as ssh looks it up, for any host and port", () => {
    const host = fc.oneof(fc.ipV4(), fc.domain());
    fc.assert(
      fc.property(host, fc.integer({ min: 1, max: 65_535 }), (h, port) => {
        const name = knownHostsName({ host: h, port });
        expect(name).toBe(port === 22 ? h : `[${h}]:${port}`);
        expect(endpointOf(`${h}:${port}`)).toEqual({ host: h, port });
      }),
    );
  });
});

const caId = "0b7d6c2e-8f4a-4a55-9a3c-0d2e1f3a4b5c";
const targetId = "6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e";

describe("known_hosts", () => {
  it("has one @cert-authority line per CA key, for the names of the targets it signs", () => {
    const ca = create(CertificateAuthoritySchema, {
      id: caId,
      publicKey: "ssh-ed25519 AAAAnew",
      trustedKeys: [
        { role: TrustedKeyRole.CURRENT, publicKey: "ssh-ed25519 AAAAnew" },
        { role: TrustedKeyRole.RETIRED, publicKey: "ssh-ed25519 AAAAold retired" },
      ],
    });
    const other = create(CertificateAuthoritySchema, { id: "ca-2", publicKey: "ssh-ed25519 AAAAother" });
    const target = create(TargetSchema, {
      id: targetId,
      name: "web-01",
      caId,
      endpoints: ["10.0.0.5:4022", "web.internal"],
    });
    const lines = knownHostsFile([ca, other], [target])
      .split("\n")
      .filter((l) => l.startsWith("@"));
    const names = `${targetId},web-01,10.0.0.5,[10.0.0.5]:4022,web.internal`;
    expect(lines).toEqual([
      `@cert-authority ${names} ssh-ed25519 AAAAnew`,
      `@cert-authority ${names} ssh-ed25519 AAAAold`,
    ]);
  });

  it("leaves out targets whose names or endpoints could widen the pattern, and key lines that are no key", () => {
    const ca = create(CertificateAuthoritySchema, {
      id: caId,
      publicKey: 'ssh-ed25519 AAAAgood\ncert-authority,command="x" ssh-ed25519 AAAAbad\n',
    });
    const target = (name: string, endpoints: string[], id: string = crypto.randomUUID()) =>
      create(TargetSchema, { id, name, caId, endpoints });
    const file = knownHostsFile(
      [ca],
      [
        target("web-01", ["10.0.0.5"], targetId),
        target("all", ["*"]),
        target("*", ["10.0.0.6"]),
        target("two", ["10.0.0.7 ssh-ed25519"]),
        target("nl", ["10.0.0.8"], "id\n@cert-authority * ssh-ed25519 AAAAevil"),
      ],
    );
    expect(file.split("\n").filter((l) => !l.startsWith("#"))).toEqual([
      `@cert-authority ${targetId},web-01,10.0.0.5 ssh-ed25519 AAAAgood`,
      "",
    ]);
  });
});

/** ssh_config as OpenSSH reads it: lines, blanks and `#` comments skipped, words split on blanks and quotes. */
function directives(text: string): string[][] {
  const parsed: string[][] = [];
  for (const line of text.split("\n")) {
    const words: string[] = [];
    const word = /"([^"]*)"|([^\s"=]+)/g;
    for (let m = word.exec(line); m !== null; m = word.exec(line)) words.push(m[1] ?? m[2]!);
    if (words.length === 0 || words[0]!.startsWith("#")) continue;
    parsed.push(words);
  }
  return parsed;
}

const files = {
  identityFile: "/home/a b/.config/wap/ssh/key",
  certificateFile: "/home/a b/.config/wap/ssh/key-cert.pub",
  knownHostsFile: "/home/a b/.config/wap/ssh/known_hosts",
};

/** A string as a hostile workspace writes it: anything, or one of the review's payloads. */
const hostile = fc.oneof(
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.constantFrom(
    hostileWorkspaceName("/tmp/x"),
    "-oProxyCommand=touch /tmp/x",
    "web\r\n  ProxyCommand x",
    'web" ProxyCommand "x',
    "*",
    "web,*",
    "\u001b]0;owned\u0007",
    "\u202eweb",
  ),
);
const valid = {
  id: fc.uuid().map((id) => id.toLowerCase()),
  name: fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9_-]{0,20}$/),
  endpoint: fc.oneof(
    fc.domain(),
    fc.tuple(fc.ipV4(), fc.integer({ min: 1, max: 65_535 })).map(([ip, port]) => `${ip}:${port}`),
    fc.tuple(fc.ipV6(), fc.integer({ min: 1, max: 65_535 })).map(([ip, port]) => `[${ip}]:${port}`),
  ),
  login: fc.stringMatching(/^[a-z_][a-z0-9_-]{0,20}$/),
};
const either = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: good, weight: 3 }, { arbitrary: bad, weight: 1 });

const entry = fc
  .record({
    workspaceName: hostile,
    workspaceId: either(valid.id, hostile),
    id: either(valid.id, hostile),
    name: either(valid.name, hostile),
    endpoints: fc.array(either(valid.endpoint, hostile), { minLength: 1, maxLength: 3 }),
    logins: fc.array(either(valid.login, hostile), { minLength: 1, maxLength: 3 }),
    caId: either(valid.id, hostile),
  })
  .map((e) => {
    const workspace = create(WorkspaceSchema, { id: e.workspaceId, name: e.workspaceName });
    const target = create(TargetSchema, { id: e.id, name: e.name, endpoints: e.endpoints, caId: e.caId });
    const authority = create(CertificateAuthoritySchema, { id: e.caId, publicKey: "ssh-ed25519 AAAA" });
    const reachable: Reachable = {
      target,
      logins: e.logins,
      onRequest: [],
      limited: [],
      stepUp: [],
      daemon: undefined,
      authority,
    };
    return { workspace, reachable };
  });

function configFor(entries: ReadonlyArray<{ workspace: Workspace; reachable: Reachable }>) {
  const usable = entries.filter(
    ({ workspace, reachable }) => configProblem(workspace, reachable) === undefined,
  );
  const aliases = aliasesFor(usable);
  const hosts = usable.map(({ workspace, reachable }, i) =>
    hostBlock(workspace, reachable, aliases[i]!, files),
  );
  const hook = { aliases, command: "'wap' 'cert' 'ssh'" };
  return { usable, aliases, text: renderSshConfig(aliases.length > 0 ? [hook] : [], hosts) };
}

describe("ssh_config from server strings", () => {
  it("escapes % in the hook and quotes values with spaces", () => {
    const text = renderSshConfig(
      [{ aliases: ["web-01", "db-1"], command: "'wap' '--renew-if-under' '50%'" }],
      [{ alias: "web-01", comment: "web", settings: [["IdentityFile", "/home/a b/key"]] }],
    );
    expect(text).toContain(`Match originalhost web-01,db-1 exec "'wap' '--renew-if-under' '50%%'"`);
    expect(text).toContain('Host web-01\n  IdentityFile "/home/a b/key"\n');
  });

  it("has exactly the intended directives, whatever the workspace wrote (property)", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 4 }), (entries) => {
        const { usable, aliases, text } = configFor(entries);
        const expected: string[][] =
          aliases.length > 0
            ? [["Match", "originalhost", aliases.join(","), "exec", "'wap' 'cert' 'ssh'"]]
            : [];
        for (const [i, { reachable }] of usable.entries()) {
          const endpoint = endpointOf(reachable.target.endpoints[0]!)!;
          expected.push(
            ["Host", aliases[i]!],
            ["HostName", endpoint.host],
            ["Port", String(endpoint.port)],
            ["User", reachable.logins.find((l) => /^[a-z_][a-z0-9_-]*\$?$/.test(l))!],
            ["IdentityFile", files.identityFile],
            ["CertificateFile", files.certificateFile],
            ["IdentitiesOnly", "yes"],
            ["UserKnownHostsFile", files.knownHostsFile],
            ["StrictHostKeyChecking", "yes"],
            ["HostKeyAlias", reachable.target.id],
          );
        }
        expect(directives(text)).toEqual(expected);
        // Nothing but the layout's line breaks: no CR, no escape, no bidi control anywhere.
        expect(hasControlCharacters(text.replaceAll("\n", ""))).toBe(false);
        // A target is left out exactly when one of its strings is not of the server's forms.
        for (const e of entries)
          expect(usable.includes(e)).toBe(configProblem(e.workspace, e.reachable) === undefined);
      }),
      { numRuns: 300 },
    );
  });

  it("ssh -G reads no directive from a workspace named with line breaks, for its hosts or any other", async () => {
    const marker = join(scratch, "owned");
    const [good] = fc.sample(entry, { numRuns: 1, seed: 1 });
    const workspace = create(WorkspaceSchema, {
      id: crypto.randomUUID(),
      name: hostileWorkspaceName(marker),
    });
    const reachable: Reachable = {
      ...good!.reachable,
      target: create(TargetSchema, { id: targetId, name: "web-01", endpoints: ["10.0.0.5:4022"], caId }),
      logins: ["deploy"],
      authority: create(CertificateAuthoritySchema, { id: caId }),
    };
    const { text, usable } = configFor([{ workspace, reachable }]);
    expect(usable).toHaveLength(1);
    expect(text).toContain(
      `# web-01 in x\\x0aHost *\\x0a  ProxyCommand touch ${marker}\\x0a# (target ${targetId})`,
    );
    const config = join(scratch, "config");
    await writeFile(config, text);
    const settings = async (host: string) => {
      const { stdout } = await run("ssh", ["-G", "-F", config, host], {
        env: { PATH: process.env.PATH, HOME: scratch },
      });
      return new Map(
        stdout.split("\n").map((line) => [line.split(" ")[0]!, line.slice(line.indexOf(" ") + 1)]),
      );
    };
    const web = await settings("web-01");
    expect(web.get("hostname")).toBe("10.0.0.5");
    expect(web.get("port")).toBe("4022");
    expect(web.get("user")).toBe("deploy");
    expect(web.get("hostkeyalias")).toBe(targetId);
    expect(web.has("proxycommand")).toBe(false);
    expect((await settings("github.com")).has("proxycommand")).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });
});

describe("ssh arguments", () => {
  it("pass the port and user as their own options and put -- before the destination", () => {
    const args = sshArguments([["BatchMode", "yes"]], { host: "web-01", port: 4022 }, "deploy", ["uptime"]);
    expect(args).toEqual(["-o", "BatchMode=yes", "-p", "4022", "-l", "deploy", "--", "web-01", "uptime"]);
  });

  it("make the real ssh read a destination that looks like an option as a host, never run it", async () => {
    const marker = join(scratch, "proxied");
    const args = sshArguments(
      [
        ["BatchMode", "yes"],
        ["ConnectTimeout", "2"],
      ],
      { host: `-oProxyCommand=touch ${marker}`, port: 22 },
      "deploy",
      ["true"],
    );
    const result = await run("ssh", ["-F", "/dev/null", ...args], {
      env: { PATH: process.env.PATH, HOME: scratch },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(255);
    expect(existsSync(marker)).toBe(false);
  });
});

describe("destinations", () => {
  it("splits login@target at the last @", () => {
    expect(parseDestination("web-01")).toEqual({ login: undefined, target: "web-01" });
    expect(parseDestination("deploy@web-01")).toEqual({ login: "deploy", target: "web-01" });
    expect(parseDestination("a@b@web-01")).toEqual({ login: "a@b", target: "web-01" });
  });
});

describe("targets wap hands to ssh", () => {
  it("are refused with the string that is wrong, quoted and escaped", () => {
    const target = (fields: { id?: string; name?: string; endpoints?: string[] }) =>
      create(TargetSchema, { id: targetId, name: "web-01", endpoints: ["10.0.0.5"], ...fields });
    expect(targetProblem(target({}))).toBeUndefined();
    expect(targetProblem(target({ endpoints: ["-oProxyCommand=touch /tmp/x"] }))).toBe(
      'its endpoint "-oProxyCommand=touch /tmp/x" is not a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022)',
    );
    expect(targetProblem(target({ name: "a\nb" }))).toBe('its name "a\\nb" is not a target name');
    expect(targetProblem(target({ id: "x" }))).toBe('its id "x" is not a UUID');
    // A hostile target name never becomes a Host alias, a pattern or an option.
    for (const name of ["-oProxyCommand=touch /tmp/x", "web-01\n  ProxyCommand x", "web,*", "*", 'w" x'])
      expect(targetProblem(target({ name }))).toBe(`its name ${JSON.stringify(name)} is not a target name`);
  });
});

describe("files named by server ids", () => {
  it("are named only by UUIDs, never by a path", () => {
    const store = { sshDir: "/home/ada/.config/wap/ssh" } as ConfigStore;
    expect(certificatePaths(store, caId).privateKey).toBe(`/home/ada/.config/wap/ssh/${caId}`);
    expect(knownHostsPath(store, caId)).toBe(`/home/ada/.config/wap/ssh/known_hosts-${caId}`);
    // A login's own certificate (limits, step-up) adds the target id and a Unix login name only.
    const binding = { targetId: caId, login: "deploy" };
    expect(certificatePaths(store, caId, { binding }).certificate).toBe(
      `/home/ada/.config/wap/ssh/${caId}.${caId}.deploy-cert.pub`,
    );
    for (const login of ["../x", "-oProxyCommand=x", "a b", "a\nb"])
      expect(() => certificatePaths(store, caId, { binding: { targetId: caId, login } })).toThrow(
        /cannot name a file/,
      );
    for (const id of ["../../.bashrc", "/etc/passwd", "", `${caId}/x`]) {
      expect(() => certificatePaths(store, id)).toThrow(/is not an id/);
      expect(() => knownHostsPath(store, id)).toThrow(/is not an id/);
    }
  });
});
