import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DaemonClient } from "@wap/client";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoginRecording } from "./ssh-recording.js";
import { SpoolBudget, SshSpool } from "./ssh-spool.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-ssh-spool-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The bytes of every file under `path`. */
async function bytesUnder(path: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    total += entry.isDirectory() ? await bytesUnder(full) : (await stat(full)).size;
  }
  return total;
}

const facts = {
  certificate: "ssh-ed25519-cert-v01@openssh.com AAAA",
  username: "deploy",
  kind: "shell" as const,
  command: "",
  tty: true,
  clientAddress: "203.0.113.7:50022",
};

/** Never reached: the spool is only written in these tests. */
const unreachable = {} as DaemonClient;

describe("the spool's bound", () => {
  it("never lets what it counts go past its maximum, and takes exactly what fits", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1 << 20 }),
        fc.array(
          fc.oneof(
            fc.record({ take: fc.integer({ min: 0, max: 1 << 18 }) }),
            fc.record({ release: fc.integer({ min: 0, max: 1 << 18 }) }),
          ),
          { maxLength: 200 },
        ),
        (max, operations) => {
          const budget = new SpoolBudget(max);
          for (const operation of operations) {
            const before = budget.used;
            if ("take" in operation) {
              const fits = before + operation.take <= max;
              expect(budget.take(operation.take)).toBe(fits);
              expect(budget.used).toBe(fits ? before + operation.take : before);
            } else {
              budget.release(operation.release);
              expect(budget.used).toBe(Math.max(0, before - operation.release));
            }
            expect(budget.used).toBeGreaterThanOrEqual(0);
            expect(budget.used).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });

  it("holds on disk: a recording that does not fit stops with a marker, the login's end says so, and the files stay within the bound", {
    timeout: 60_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 6_000, max: 40_000 }),
        fc.array(fc.integer({ min: 1, max: 9_000 }), { minLength: 1, maxLength: 20 }),
        async (maxBytes, outputs) => {
          const spoolDir = await mkdtemp(join(dir, "spool-"));
          const spool = await SshSpool.open({
            dir: spoolDir,
            maxBytes,
            client: unreachable,
            log: () => {},
            onRegistered: () => {},
          });
          const spooled = await spool.begin(facts, true);
          if (!spooled) {
            // Not even the login's facts and its reserve fit: nothing is written.
            expect(await readdir(spoolDir)).toEqual([]);
            return;
          }
          const recording = new LoginRecording({
            sessionId: `local-${spooled.login.offlineId}`,
            client: unreachable,
            log: () => {},
            kind: "shell",
            command: "",
            tty: true,
            size: { cols: 80, rows: 24 },
            requireRecording: false,
            onCannotStore: () => {},
            spool: spooled,
          });
          for (const size of outputs) {
            recording.output(Buffer.alloc(size, "x"));
            expect(await bytesUnder(spoolDir)).toBeLessThanOrEqual(maxBytes);
          }
          await recording.finish(0);
          spooled.writeEnd({
            endedAt: new Date().toISOString(),
            exitStatus: 0,
            bytesIn: 0,
            bytesOut: 0,
            reason: "the login ended (exit 0)",
          });
          expect(await bytesUnder(spoolDir)).toBeLessThanOrEqual(maxBytes);
          expect(spool.budget.used).toBeLessThanOrEqual(maxBytes);
          const cast = (await readFile(spooled.recordingFile, "utf8").catch(() => "")).trimEnd().split("\n");
          const last = cast.at(-1) ?? "";
          if (spooled.gap) {
            if (cast[0]) expect(last).toContain("recording stopped: the agent's spool is full");
          } else {
            expect(JSON.parse(last)).toEqual([expect.any(Number), "m", "exit status 0"]);
          }
          spool.close();
          await rm(spoolDir, { recursive: true, force: true });
        },
      ),
      { numRuns: 25 },
    );
  });

  it("survives a restart of the agent: a login found without an end is given one saying the agent stopped", async () => {
    const spoolDir = await mkdtemp(join(dir, "restart-"));
    const options = {
      dir: spoolDir,
      maxBytes: 1 << 20,
      client: unreachable,
      log: () => {},
      onRegistered: () => {},
    };
    const first = await SshSpool.open(options);
    const spooled = (await first.begin(facts, true))!;
    const recording = new LoginRecording({
      sessionId: "local",
      client: unreachable,
      log: () => {},
      kind: "shell",
      command: "",
      tty: true,
      size: { cols: 80, rows: 24 },
      requireRecording: false,
      onCannotStore: () => {},
      spool: spooled,
    });
    recording.output(Buffer.from("before the restart\r\n"));
    first.close();
    const second = await SshSpool.open(options);
    expect(second.size).toBe(1);
    const folder = join(spoolDir, spooled.login.offlineId);
    expect((await stat(folder)).mode & 0o777).toBe(0o700);
    const end = JSON.parse(await readFile(join(folder, "end.json"), "utf8"));
    expect(end).toMatchObject({
      exitStatus: -1,
      reason: "the agent stopped during the login: how it ended is not known",
    });
    const lines = (await readFile(join(folder, "recording.cast"), "utf8")).trimEnd().split("\n");
    expect(JSON.parse(lines.at(-2)!)).toEqual([expect.any(Number), "o", "before the restart\r\n"]);
    expect(JSON.parse(lines.at(-1)!)).toEqual([
      expect.any(Number),
      "m",
      "the agent stopped: the rest of the login was not recorded",
    ]);
    for (const file of await readdir(folder))
      expect((await stat(join(folder, file))).mode & 0o777).toBe(0o600);
    // What it counts never understates what is on disk (the reserve of the end is counted too).
    expect(second.budget.used).toBeGreaterThanOrEqual(await bytesUnder(spoolDir));
    second.close();
  });
});
