import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatDuration, maxDurationMs, parseDuration } from "./duration.js";

describe("parseDuration", () => {
  it("reads units and bare seconds", () => {
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("5m")).toBe(300_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("2d")).toBe(172_800_000);
    expect(parseDuration("600")).toBe(600_000);
  });

  it("refuses what is not a positive duration of at most a year", () => {
    for (const bad of ["", "0", "0s", "5 minutes", "-5m", "1y", "m", "1.5h", "366d", "9999999999"]) {
      expect(parseDuration(bad), bad).toBeUndefined();
    }
  });

  it("round-trips every whole-second duration within its bound", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: maxDurationMs / 1000 }), (seconds) => {
        expect(parseDuration(formatDuration(seconds * 1000))).toBe(seconds * 1000);
      }),
    );
  });

  it("never accepts more than the bound, whatever the units", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 999_999_999 }), fc.constantFrom("s", "m", "h", "d")), {
          minLength: 1,
          maxLength: 4,
        }),
        (parts) => {
          const ms = parseDuration(parts.map(([n, u]) => `${n}${u}`).join(""));
          if (ms !== undefined) expect(ms).toBeGreaterThan(0);
          if (ms !== undefined) expect(ms).toBeLessThanOrEqual(maxDurationMs);
        },
      ),
    );
  });
});
