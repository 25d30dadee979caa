import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../../..");

describe("the process's last resort", () => {
  it("logs a rejection nobody handled, with its stack, and the process goes on", async () => {
    const script = [
      'import { logUnhandledRejections } from "./packages/server/src/last-resort.ts";',
      "logUnhandledRejections();",
      'Promise.reject(new Error("a stream nobody watched"));',
      'setTimeout(() => process.stdout.write("still serving"), 100);',
    ].join("\n");
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--conditions=dev-source", "--import", "tsx", "--input-type=module", "-e", script],
      { cwd: repoRoot },
    );
    expect(stdout).toBe("still serving");
    const line = JSON.parse(stderr.trim().split("\n").at(-1)!) as Record<string, string>;
    expect(line).toMatchObject({ level: "error", msg: "unhandled rejection" });
    expect(line.error).toContain("Error: a stream nobody watched");
    expect(line.error).toMatch(/\n\s+at /);
  });
});
