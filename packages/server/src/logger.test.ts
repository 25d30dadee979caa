import { describe, expect, it } from "vitest";
import { createJsonLogger } from "./logger.js";

describe("createJsonLogger", () => {
  it("writes one JSON object per line: time, level, msg, then the fields", () => {
    const lines: string[] = [];
    const logger = createJsonLogger("info", (line) => lines.push(line));
    logger.info("request", { status: 200, rpc: "/a.B/C", skipped: undefined, text: 'quote " and \n' });
    logger.warn("plain");
    logger.error("empty fields", {});
    expect(lines.every((line) => line.endsWith("}\n") && !line.slice(0, -1).includes("\n"))).toBe(true);
    const [first, second, third] = lines.map((line) => JSON.parse(line));
    expect(first).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: "info",
      msg: "request",
      status: 200,
      rpc: "/a.B/C",
      text: 'quote " and \n',
    });
    expect(Object.keys(first)).toEqual(["time", "level", "msg", "status", "rpc", "text"]);
    expect(second).toEqual({ time: expect.any(String), level: "warn", msg: "plain" });
    expect(third).toEqual({ time: expect.any(String), level: "error", msg: "empty fields" });
  });

  it("lets a field named like a fixed key replace it, as before", () => {
    const lines: string[] = [];
    createJsonLogger("debug", (line) => lines.push(line)).debug("m", { msg: "mine", n: 1 });
    expect(JSON.parse(lines[0]!)).toEqual({ time: expect.any(String), level: "debug", msg: "mine", n: 1 });
  });

  it("drops lines below its level and says which levels it keeps", () => {
    const lines: string[] = [];
    const logger = createJsonLogger("warn", (line) => lines.push(line));
    logger.debug("no");
    logger.info("no");
    logger.warn("yes");
    expect(lines).toHaveLength(1);
    expect([logger.enabled?.("info"), logger.enabled?.("warn"), logger.enabled?.("error")]).toEqual([
      false,
      true,
      true,
    ]);
    expect(createJsonLogger("silent").enabled?.("error")).toBe(false);
  });
});
