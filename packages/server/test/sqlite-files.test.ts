/**
 * The embedded database's files: private to the server's user, and one server per data
 * directory, without a crashed server's lock standing in the way of a restart.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { restCall, signUp } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "wap-sqlite-files-"));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe("the SQLite data directory", () => {
  it("keeps wap.db, its WAL and shared-memory files mode 0600, with a permissive umask", async () => {
    const previous = process.umask(0o022);
    let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      server = await startTestServer({ dataDir });
      await signUp(server.url, "files");
      for (const name of ["wap.db", "wap.db-wal", "wap.db-shm", "wap.db.lock"]) {
        const mode = (await stat(join(dataDir, name))).mode & 0o777;
        expect(mode.toString(8), name).toBe("600");
      }
    } finally {
      process.umask(previous);
      await server?.close();
    }
  });

  it("refuses a second server on the same directory with a clear message, and lets the first run on", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wap-sqlite-lock-"));
    const first = await startTestServer({ dataDir: dir });
    try {
      const second = await startTestServer({ dataDir: dir }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((second as Error).name).toBe("StartupError");
      expect((second as Error).message).toMatch(
        /is in use by another running process.*its own data directory/,
      );
      expect((await restCall(first.url, "GET", "/readyz")).status).toBe(200);
    } finally {
      await first.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses while another process holds the lock, and starts once that process was killed", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wap-sqlite-stale-"));
    // Another process holding the lock as a server does, then killed: nothing of it runs after.
    const holder = spawn(
      process.execPath,
      [
        "--conditions=dev-source",
        "--import",
        "tsx",
        "-e",
        // The release function is kept: dropped, the lock's connection could be collected and closed.
        "import('@wap/storage-sqlite').then((m) => { globalThis.release = m.lockDatabase(process.argv[1]); console.log('locked'); setInterval(() => {}, 1000); })",
        join(dir, "wap.db"),
      ],
      { cwd: import.meta.dirname, stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("locked")) resolve();
        });
        holder.once("exit", () => reject(new Error("the lock holder exited early")));
      });
      const refused = await startTestServer({ dataDir: dir }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((refused as Error).message).toMatch(/is in use by another running process/);
      holder.kill("SIGKILL");
      await exited;
      const restarted = await startTestServer({ dataDir: dir });
      try {
        expect((await restCall(restarted.url, "GET", "/readyz")).status).toBe(200);
      } finally {
        await restarted.close();
      }
    } finally {
      if (holder.exitCode === null) holder.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});
