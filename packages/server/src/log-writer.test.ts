import { spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const logger = fileURLToPath(new URL("./logger.ts", import.meta.url));

/**
 * Runs `body` in a fresh Node process with `log` (an info logger to stderr) in scope, and
 * returns its stderr's request lines and how it ended. `to` sends stderr to a pipe or a file.
 */
async function run(body: string, to: "pipe" | "file" = "pipe") {
  const dir = await mkdtemp(join(tmpdir(), "wap-log-writer-"));
  try {
    const file = join(dir, "stderr.log");
    const fd = to === "file" ? openSync(file, "w") : undefined;
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { createJsonLogger } from ${JSON.stringify(logger)};\nconst log = createJsonLogger("info");\n${body}`,
      ],
      { stdio: ["ignore", "ignore", fd ?? "pipe"] },
    );
    let piped = "";
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      piped += chunk;
    });
    const [code, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
    if (fd !== undefined) closeSync(fd);
    const text = fd === undefined ? piped : await readFile(file, "utf8");
    const lines = text
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; n?: number; level: string });
    return { lines, code, signal, text };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const numbered = (lines: readonly { msg: string; n?: number }[]) =>
  lines.filter((l) => l.msg === "request").map((l) => l.n);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("log lines written by the writer thread", () => {
  it("are all written, in order, when the process exits right after logging them", async () => {
    const { lines, code } = await run(
      `for (let n = 0; n < 3000; n++) log.info("request", { n, path: "/x".repeat(20) });\nprocess.exit(0);`,
    );
    expect(code).toBe(0);
    expect(numbered(lines)).toEqual(range(3000));
  });

  it("are all written when more than a pipe holds is logged over many turns and the process ends by itself", async () => {
    // 64 KiB fill a pipe: the thread waits for the reader, the event loop does not.
    const { lines, code } = await run(
      `for (let turn = 0; turn < 20; turn++) {\n  for (let i = 0; i < 500; i++) log.info("request", { n: turn * 500 + i, pad: "p".repeat(100) });\n  await new Promise((r) => setImmediate(r));\n}`,
    );
    expect(code).toBe(0);
    expect(numbered(lines)).toEqual(range(10_000));
  });

  it("are all written to a file before a graceful SIGTERM ends the process", async () => {
    const { lines, signal, code } = await run(
      `process.once("SIGTERM", () => { log.info("signal received", {}); process.exit(0); });\nfor (let n = 0; n < 1000; n++) log.info("request", { n });\nsetImmediate(() => process.kill(process.pid, "SIGTERM"));\nsetInterval(() => {}, 1000);`,
      "file",
    );
    expect({ signal, code }).toEqual({ signal: null, code: 0 });
    expect(numbered(lines)).toEqual(range(1000));
    expect(lines.at(-1)?.msg).toBe("signal received");
  });

  it("are all written before an uncaught exception ends the process", async () => {
    const { lines, code, text } = await run(
      `for (let n = 0; n < 500; n++) log.info("request", { n });\nsetImmediate(() => { throw new Error("boom"); });`,
    );
    expect(code).toBe(1);
    expect(text).toContain("boom");
    expect(numbered(lines)).toEqual(range(500));
  });

  it("writes an error line, and every line before it, before the call returns", async () => {
    // SIGKILL right after: nothing at exit runs, so the error line must already be out.
    const { lines, signal } = await run(
      `for (let n = 0; n < 200; n++) log.info("request", { n });\nlog.error("about to die", { reason: "test" });\nprocess.kill(process.pid, "SIGKILL");`,
    );
    expect(signal).toBe("SIGKILL");
    expect(numbered(lines)).toEqual(range(200));
    expect(lines.at(-1)).toMatchObject({ level: "error", msg: "about to die", reason: "test" });
  });
});
