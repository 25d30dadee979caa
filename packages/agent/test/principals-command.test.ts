/**
 * Host-bound, single-use certificates against a real sshd whose authentication settings are what
 * `wap-agent sshd-config --principals-command` prints: sshd asks the real `wap-agent
 * principals-check` for each certificate login. Certificates are made by `ssh-keygen -s` with the
 * extensions the server writes (`target@wap`, `single-use@wap`): the first login is accepted, a
 * replay is refused and recorded for the agent to report; a certificate for another target is
 * refused; a certificate without them logs in as often as it likes.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { SINGLE_USE_EXTENSION, TARGET_EXTENSION } from "@wap/ssh-wire/extensions";
import { wapAgent } from "@wap/test-kit/agent-process";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pendingRefusals, reportedRefusals } from "../src/principals-check.js";
import { SshdFiles } from "../src/sshd-files.js";

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const targetId = "7d3c1a52-8a44-4a5e-9d51-0c6f1b2e3a4d";
const principal = "0b0c7a0e-7b5e-4b0a-9a53-3f0f2d1c5e11";

let dir: string;
let sshdDir: string;
let sshd: RunningSshd;
let files: SshdFiles;
let serial = 1000;

/** The agent program as sshd runs it: absolute paths only (sshd gives it no environment). */
function agentProgram(): string {
  const tsx = createRequire(join(repoRoot, "package.json")).resolve("tsx");
  return [
    process.execPath,
    "--conditions=dev-source",
    "--import",
    pathToFileURL(tsx).href,
    join(repoRoot, "packages/agent/src/bin.ts"),
  ].join(" ");
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-principals-command-"));
  sshdDir = join(dir, "sshd");
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "ca", "-f", join(dir, "ca")]);
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "user", "-f", join(dir, "id")]);
  const config = await wapAgent([
    "sshd-config",
    "--sshd-dir",
    sshdDir,
    "--principals-command",
    agentProgram(),
  ]);
  expect(config, config.stderr).toMatchObject({ code: 0 });
  const lines = config.stdout.trim().split("\n");
  // The session wrapper's Match block comes last; no agent serves its socket here, and the
  // wrapper has its own tests (ssh-sessions.test.ts): sshd gets the lines before it.
  expect(lines).toContain("Match all");
  const authConfig = lines.slice(0, lines.indexOf("Match all"));
  expect(authConfig.some((l) => l.startsWith("AuthorizedPrincipalsFile"))).toBe(false);
  expect(authConfig).toContain("AuthorizedPrincipalsCommandUser root");
  sshd = await startSshd({ authConfig });
  files = new SshdFiles(sshdDir);
  await files.writeTrustedUserCaKeys(await readFile(join(dir, "ca.pub"), "utf8"));
  await files.writePrincipals(new Map([[sshd.user, [principal]]]));
  // The host certificate names the target first, as the server signs it.
  await writeFile(join(dir, "host.pub"), `${sshd.hostKeyLine}\n`);
  await run("ssh-keygen", [
    "-q",
    "-s",
    join(dir, "ca"),
    "-h",
    "-I",
    "host",
    "-n",
    `${targetId},web-1`,
    join(dir, "host.pub"),
  ]);
  await files.writeHostCertificate(await readFile(join(dir, "host-cert.pub"), "utf8"));
}, 120_000);

afterAll(async () => {
  await sshd?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A user certificate from the CA with these extensions; returns its file. */
async function certificate(extensions: string[]): Promise<{ file: string; serial: string }> {
  const n = String(++serial);
  const key = join(dir, `id-${n}`);
  await writeFile(`${key}.pub`, await readFile(join(dir, "id.pub")));
  const options = ["-O", "clear", ...extensions.flatMap((e) => ["-O", `extension:${e}`])];
  await run("ssh-keygen", [
    "-q",
    "-s",
    join(dir, "ca"),
    "-I",
    `wap:${n}`,
    "-n",
    principal,
    "-z",
    n,
    "-V",
    "-5m:+5m",
    ...options,
    `${key}.pub`,
  ]);
  return { file: `${key}-cert.pub`, serial: n };
}

const login = (certificateFile: string) =>
  sshd.ssh({ identityFile: join(dir, "id"), certificateFile, command: "echo in" });

describe("sshd with the agent's principals command", () => {
  it("lets an ordinary certificate in as often as it likes", async () => {
    const cert = await certificate(["permit-pty"]);
    for (let i = 0; i < 2; i++) {
      const result = await login(cert.file);
      expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "in\n" });
    }
  });

  it("accepts a single-use certificate for this target once, then refuses and records the replay", async () => {
    const cert = await certificate([`${TARGET_EXTENSION}=${targetId}`, SINGLE_USE_EXTENSION]);
    expect(await login(cert.file), sshd.logs()).toMatchObject({ code: 0, stdout: "in\n" });
    expect((await login(cert.file)).code).toBe(255);
    const pending = await pendingRefusals(sshdDir, 100);
    expect(pending.refusals).toEqual([
      { serial: cert.serial, reason: "replayed", refusedAt: expect.any(Date) },
    ]);
    await reportedRefusals(pending.files);
    expect((await pendingRefusals(sshdDir, 100)).refusals).toEqual([]);
    // The use is remembered until the certificate expires, and only its own entry is kept.
    expect(await readdir(join(sshdDir, "used-serials"))).toContain(cert.serial);
  });

  it("refuses a certificate bound to another target", async () => {
    const cert = await certificate([`${TARGET_EXTENSION}=${crypto.randomUUID()}`, SINGLE_USE_EXTENSION]);
    expect((await login(cert.file)).code).toBe(255);
    const pending = await pendingRefusals(sshdDir, 100);
    expect(pending.refusals).toEqual([
      { serial: cert.serial, reason: "other_target", refusedAt: expect.any(Date) },
    ]);
    await reportedRefusals(pending.files);
  });
});
