/**
 * The operator's commands, run as an operator runs them (`wap-server <command>` in a process of
 * its own, from source): `--version`, `backup` while a server keeps writing, `restore`, and
 * `rotate-master-key` on SQLite (key file) and PostgreSQL (several instances' procedure).
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerOptions, silentLogger } from "../src/index.js";
import { sshEd25519PublicKey } from "./support/ssh-keys.js";

const repoRoot = join(import.meta.dirname, "../../..");
const bin = "packages/server/src/bin.ts";

interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `wap-server <args>` to its end with `env` over the test's environment. */
async function wapServer(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--conditions=dev-source", "--import", "tsx", bin, ...args],
      { cwd: repoRoot, env: { ...process.env, WAP_LOG_LEVEL: "info", ...env } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** Long enough for several `wap-server` processes on a loaded machine. */
const slow = 240_000;

/** A server in this process over `dataDir` (or the database the options name). */
function serve(options: ServerOptions): Promise<TestServer> {
  return startTestServer({ logger: silentLogger, ...options });
}

const dirs: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function createSshAuthority(url: string, token: string, workspaceId: string): Promise<string> {
  const made = await restCall(
    url,
    "POST",
    `/v1/workspaces/${workspaceId}/certificate_authorities`,
    { name: `ssh-${Date.now()}`, keyType: "CERTIFICATE_KEY_TYPE_ED25519" },
    { token },
  );
  expect(made.status).toBe(200);
  return made.body.certificateAuthority.id as string;
}

/** A PASETO token of a new editor service account of the workspace. */
async function serviceAccountToken(url: string, owner: { accessToken: string; workspaceId: string }) {
  const made = await restCall(
    url,
    "POST",
    `/v1/workspaces/${owner.workspaceId}/service_accounts`,
    { name: "robot", roleName: "editor" },
    { token: owner.accessToken },
  );
  expect(made.status).toBe(200);
  expect(made.body.token).toMatch(/^v4\.public\./);
  return made.body.token as string;
}

/** Signs a user certificate with the authority: proof its sealed private key opens. */
async function signsWith(url: string, token: string, workspaceId: string, caId: string): Promise<boolean> {
  const signed = await restCall(
    url,
    "POST",
    `/v1/workspaces/${workspaceId}/sign-ssh`,
    { caId, publicKey: sshEd25519PublicKey() },
    { token },
  );
  return signed.status === 200 && typeof signed.body.signedCertificate === "string";
}

describe("wap-server --version", () => {
  it(
    "prints the package's version",
    async () => {
      const manifest = JSON.parse(await readFile(join(repoRoot, "packages/server/package.json"), "utf8"));
      const result = await wapServer(["--version"], {});
      expect(result).toMatchObject({ code: 0, stdout: `wap-server ${manifest.version}\n` });
    },
    slow,
  );
});

describe("backup and restore of the embedded database", () => {
  let dataDir: string;
  let server: TestServer;
  beforeAll(async () => {
    dataDir = await tempDir("wap-backup-");
    server = await serve({ dataDir });
  });
  afterAll(async () => {
    await server.close();
  });

  it(
    "writes the backup, and the restored database, readable by their owner only under umask 022",
    async () => {
      await signUpWithWorkspace(server.url);
      const backupFile = join(await tempDir("wap-backup-mode-"), "wap-backup.db");
      const restoredDir = await tempDir("wap-restored-mode-");
      // The commands run in processes of their own, which inherit this umask.
      const previous = process.umask(0o022);
      try {
        const backup = await wapServer(["backup", "--to", backupFile], { WAP_DATA_DIR: dataDir });
        expect(backup.code, backup.stderr).toBe(0);
        const restored = await wapServer(["restore", "--from", backupFile], {
          WAP_DATA_DIR: restoredDir,
          WAP_MASTER_KEY_FILE: join(dataDir, "master.key"),
        });
        expect(restored.code, restored.stderr).toBe(0);
      } finally {
        process.umask(previous);
      }
      const mode = async (file: string) => ((await stat(file)).mode & 0o777).toString(8);
      expect(await mode(backupFile)).toBe("600");
      expect(await mode(join(restoredDir, "wap.db"))).toBe("600");
    },
    slow,
  );

  it(
    "backs up under concurrent writes; the restored copy holds every write acknowledged before it began",
    async () => {
      const owner = await signUpWithWorkspace(server.url);
      const backupFile = join(await tempDir("wap-backup-file-"), "wap-backup.db");
      const acknowledged: string[] = [];

      let writing = true;
      const writeLoop = async (writer: number) => {
        for (let i = 0; writing; i++) {
          const made = await restCall(
            server.url,
            "POST",
            `/v1/workspaces/${owner.workspaceId}/teams`,
            { name: `team ${writer}-${i}` },
            { token: owner.accessToken },
          );
          expect(made.status).toBe(200);
          acknowledged.push(made.body.team.id as string);
        }
      };
      // Four writers, so that the WAL is busy while the backup reads.
      const writers = [0, 1, 2, 3].map(writeLoop);
      await until(() => acknowledged.length >= 20);
      const acknowledgedAtStart = [...acknowledged];
      const backup = await wapServer(["backup", "--to", backupFile], { WAP_DATA_DIR: dataDir });
      writing = false;
      await Promise.all(writers);
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.stdout).toContain(`backed up ${join(dataDir, "wap.db")} to ${backupFile}`);
      expect(backup.stdout).toContain("keep the master key with it");
      expect(acknowledged.length).toBeGreaterThan(acknowledgedAtStart.length);

      // Restoring over a directory a live server holds is refused, and changes nothing.
      const before = (await stat(join(dataDir, "wap.db"))).ino;
      const refused = await wapServer(["restore", "--from", backupFile], { WAP_DATA_DIR: dataDir });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("stop it before restoring");
      expect((await stat(join(dataDir, "wap.db"))).ino).toBe(before);

      // Restored elsewhere, with the master key the backup was made under.
      const restoredDir = await tempDir("wap-restored-");
      const keyEnv = { WAP_MASTER_KEY_FILE: join(dataDir, "master.key") };
      const wrongKey = await wapServer(["restore", "--from", backupFile], {
        WAP_DATA_DIR: restoredDir,
        WAP_MASTER_KEY: formatMasterKey(generateMasterKey()),
      });
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.stderr).toContain("the master key does not open the secrets in this backup");
      const restored = await wapServer(["restore", "--from", backupFile], {
        WAP_DATA_DIR: restoredDir,
        ...keyEnv,
      });
      expect(restored.code, restored.stderr).toBe(0);

      const copy = await serve({ dataDir: restoredDir, masterKeyFile: keyEnv.WAP_MASTER_KEY_FILE });
      try {
        // The access token issued by the original still works: the signing key came along.
        for (const id of acknowledgedAtStart) {
          const got = await restCall(
            copy.url,
            "GET",
            `/v1/workspaces/${owner.workspaceId}/teams/${id}`,
            undefined,
            {
              token: owner.accessToken,
            },
          );
          expect(got.status, id).toBe(200);
        }
      } finally {
        await copy.close();
      }
    },
    slow,
  );
});

describe("rotate-master-key on SQLite (key file, server stopped)", () => {
  it(
    "re-seals every secret under a new key file; the old key no longer opens them",
    async () => {
      const dataDir = await tempDir("wap-rotate-");
      const env = { WAP_DATA_DIR: dataDir };
      let server = await serve({ dataDir });
      const owner = await signUpWithWorkspace(server.url);
      const caId = await createSshAuthority(server.url, owner.accessToken, owner.workspaceId);
      const robot = await serviceAccountToken(server.url, owner);
      const oldKey = (await readFile(join(dataDir, "master.key"), "utf8")).trim();

      const refused = await wapServer(["rotate-master-key"], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("stop it first");
      await server.close();

      const rotated = await wapServer(["rotate-master-key"], env);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain(
        "re-sealed 1 CA keys, 2 server secrets, 0 OIDC client secrets, 0 audit signing keys and 0 webhook secrets",
      );
      const newKey = (await readFile(join(dataDir, "master.key"), "utf8")).trim();
      expect(newKey).not.toBe(oldKey);
      expect((await stat(join(dataDir, "master.key"))).mode & 0o777).toBe(0o600);

      server = await serve({ dataDir });
      try {
        // The same access token (its signing key re-sealed, not replaced) and the same CA key.
        expect(await signsWith(server.url, owner.accessToken, owner.workspaceId, caId)).toBe(true);
        // The same service-account token: its dedicated signing key is re-sealed, not replaced.
        expect(await signsWith(server.url, robot, owner.workspaceId, caId)).toBe(true);
      } finally {
        await server.close();
      }
      await expect(serve({ dataDir, masterKey: oldKey })).rejects.toThrow(
        /the master key does not open the secrets/,
      );
    },
    slow,
  );
});

describe("rotate-master-key on PostgreSQL (several instances)", () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  });
  afterAll(async () => {
    await pg.stop();
  });

  it(
    "runs instances on the new key with the old one as previous, re-seals, then drops the old key",
    async () => {
      const databaseUrl = await pg.freshSchema();
      const oldKey = formatMasterKey(generateMasterKey());
      const newKey = formatMasterKey(generateMasterKey());
      const base = { WAP_DATABASE_URL: databaseUrl };
      const on = { databaseUrl, databasePoolSize: 3 };
      let instance = await serve({ ...on, masterKey: oldKey });
      const owner = await signUpWithWorkspace(instance.url);
      const caId = await createSshAuthority(instance.url, owner.accessToken, owner.workspaceId);
      const robot = await serviceAccountToken(instance.url, owner);
      await instance.close();

      // Step 1: the instances restart on the new key, still opening what the old one sealed.
      const during = { ...base, WAP_MASTER_KEY: newKey, WAP_PREVIOUS_MASTER_KEY: oldKey };
      instance = await serve({ ...on, masterKey: newKey, previousMasterKey: oldKey });
      expect(await signsWith(instance.url, owner.accessToken, owner.workspaceId, caId)).toBe(true);
      // Step 2: one run re-seals everything under the new key, while the instance serves.
      const rotated = await wapServer(["rotate-master-key"], during);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toContain("re-sealed 1 CA keys, 2 server secrets");
      expect(rotated.stdout).toContain("remove WAP_PREVIOUS_MASTER_KEY from every instance");
      expect(await signsWith(instance.url, owner.accessToken, owner.workspaceId, caId)).toBe(true);
      expect(await signsWith(instance.url, robot, owner.workspaceId, caId)).toBe(true);
      await instance.close();

      // Step 3: the new key alone opens everything; the old one alone opens nothing.
      instance = await serve({ ...on, masterKey: newKey });
      try {
        expect(await signsWith(instance.url, owner.accessToken, owner.workspaceId, caId)).toBe(true);
        expect(await signsWith(instance.url, robot, owner.workspaceId, caId)).toBe(true);
      } finally {
        await instance.close();
      }
      await expect(serve({ ...on, masterKey: oldKey })).rejects.toThrow(
        /the master key does not open the secrets/,
      );

      // Without a previous key, a key from the environment cannot be replaced by the command.
      const refused = await wapServer(["rotate-master-key"], { ...base, WAP_MASTER_KEY: newKey });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("set WAP_PREVIOUS_MASTER_KEY to the current key");
    },
    slow,
  );
});
