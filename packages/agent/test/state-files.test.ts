/**
 * The agent's own files when they exist but cannot be read: only a missing file means "none
 * yet"; anything else stops the agent with the file named, and nothing is replaced (the key is
 * the enrolled identity). Permission failures are real ones: the command runs as `nobody`
 * (root would read anything), in a state folder `nobody` owns.
 */
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wapAgent } from "@wap/test-kit/agent-process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentState, SshdFiles } from "../src/index.js";

const nobody = 65_534;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-agent-state-"));
  await chmod(dir, 0o755);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A state folder owned by `nobody`, holding `files` (name → [contents, owner]). */
async function stateDir(name: string, files: Record<string, [string, number]>): Promise<string> {
  const path = join(dir, name);
  await mkdir(path, { mode: 0o700 });
  await chown(path, nobody, nobody);
  for (const [file, [contents, owner]] of Object.entries(files)) {
    await writeFile(join(path, file), contents, { mode: 0o600 });
    await chown(join(path, file), owner, owner);
  }
  return path;
}

const enrolArgs = (state: string) => [
  "enroll",
  "--server",
  "http://127.0.0.1:9",
  "--token",
  "t",
  "--state-dir",
  state,
];

describe("the agent's state files", () => {
  it("stops, naming the key file, and keeps the key when it cannot read it (EACCES)", async () => {
    const key =
      "-----BEGIN ENCRYPTED PRIVATE KEY-----\nthe enrolled identity\n-----END ENCRYPTED PRIVATE KEY-----\n";
    const state = await stateDir("unreadable-key", { "key.pem": [key, 0] });
    const res = await wapAgent(enrolArgs(state), {}, nobody);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`cannot read ${join(state, "key.pem")} (EACCES)`);
    expect(await readFile(join(state, "key.pem"), "utf8")).toBe(key);
    expect((await stat(join(state, "key.pem"))).uid).toBe(0);
  });

  it("stops, naming the enrolment, when it cannot read it, and contacts no server", async () => {
    const root = new AgentState(join(dir, "key-source"));
    await root.prepare();
    await root.signingKey();
    const key = await readFile(root.keyFile, "utf8");
    const enrolment = '{"server":"http://127.0.0.1:9","daemonId":"d"}\n';
    const state = await stateDir("unreadable-enrolment", {
      "key.pem": [key, nobody],
      "enrolment.json": [enrolment, 0],
    });
    for (const command of [
      enrolArgs(state),
      ["status", "--state-dir", state, "--sshd-dir", join(state, "sshd")],
    ]) {
      const res = await wapAgent(command, {}, nobody);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(`cannot read ${join(state, "enrolment.json")} (EACCES)`);
    }
    expect(await readFile(join(state, "enrolment.json"), "utf8")).toBe(enrolment);
    expect(await readFile(join(state, "key.pem"), "utf8")).toBe(key);
  });

  it("treats a key it cannot decrypt, or a state file that is a folder, as a failure, not as absent", async () => {
    const state = new AgentState(join(dir, "odd"));
    await state.prepare();
    await writeFile(state.keyFile, "not a key\n", { mode: 0o600 });
    await expect(state.signingKey()).rejects.toThrow(`cannot read ${state.keyFile}`);
    expect(await readFile(state.keyFile, "utf8")).toBe("not a key\n");
    await mkdir(state.enrolmentFile);
    await expect(state.readEnrolment()).rejects.toThrow(`cannot read ${state.enrolmentFile} (EISDIR)`);
    const files = new SshdFiles(join(dir, "odd-sshd"));
    await files.prepare();
    await mkdir(files.hostCertificate);
    await expect(files.readHostCertificate()).rejects.toThrow(
      `cannot read ${files.hostCertificate} (EISDIR)`,
    );
    await mkdir(join(files.principalsDir, "ada"));
    await expect(files.readPrincipals()).rejects.toThrow("EISDIR");
  });

  it("still creates the key and reads no enrolment when the files do not exist", async () => {
    const state = new AgentState(join(dir, "fresh"));
    await state.prepare();
    expect(await state.readEnrolment()).toBeUndefined();
    const key = await state.signingKey();
    expect(key.asymmetricKeyType).toBe("ec");
    expect((await state.signingKey()).export({ format: "jwk" })).toEqual(key.export({ format: "jwk" }));
  });
});
