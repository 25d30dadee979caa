import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  closedFrame,
  closeReasonText,
  parseControlMessage,
  resizeFrame,
  terminalSizeBounds,
} from "./terminal-frames.js";

const { min, max } = terminalSizeBounds;
const resize = (cols: unknown, rows: unknown) => JSON.stringify({ type: "resize", cols, rows });

describe("parseControlMessage", () => {
  it("accepts every size within the bounds, and reads it back as the daemon's width and height", () => {
    fc.assert(
      fc.property(fc.integer({ min, max }), fc.integer({ min, max }), (cols, rows) => {
        expect(parseControlMessage(resize(cols, rows))).toEqual({
          kind: "resize",
          size: { width: cols, height: rows },
        });
        expect(parseControlMessage(resizeFrame({ width: cols, height: rows }))).toEqual({
          kind: "resize",
          size: { width: cols, height: rows },
        });
      }),
    );
  });

  it("refuses a size just outside the bounds, on either side, in either dimension", () => {
    const outside = fc.oneof(fc.integer({ max: min - 1 }), fc.integer({ min: max + 1 }));
    const inside = fc.integer({ min, max });
    fc.assert(
      fc.property(outside, inside, fc.boolean(), (bad, good, colsBad) => {
        const message = colsBad ? resize(bad, good) : resize(good, bad);
        expect(parseControlMessage(message)).toMatchObject({ kind: "invalid" });
      }),
    );
    for (const bad of [min - 1, max + 1, 1.5, "80", null, undefined]) {
      expect(parseControlMessage(resize(bad, 24)).kind).toBe("invalid");
      expect(parseControlMessage(resize(80, bad)).kind).toBe("invalid");
    }
  });

  it("says what is wrong with a malformed frame, and ignores types it does not know", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const parsed = parseControlMessage(text);
        expect(["invalid", "ignored", "resize"]).toContain(parsed.kind);
      }),
    );
    expect(parseControlMessage("not json")).toMatchObject({
      kind: "invalid",
      message: expect.stringContaining("JSON"),
    });
    expect(parseControlMessage("[1]").kind).toBe("invalid");
    expect(parseControlMessage('{"cols":1}').kind).toBe("invalid");
    expect(parseControlMessage('{"type":"paste","data":"x"}').kind).toBe("ignored");
  });
});

describe("closing frames", () => {
  it("keeps the full reason in the closed frame and fits the close reason in 123 bytes", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400, unit: "grapheme" }), (reason) => {
        expect(JSON.parse(closedFrame(reason))).toEqual({ type: "closed", reason });
        const short = closeReasonText(reason);
        expect(Buffer.byteLength(short)).toBeLessThanOrEqual(123);
        if (Buffer.byteLength(reason) <= 123) expect(short).toBe(reason);
      }),
    );
  });
});
