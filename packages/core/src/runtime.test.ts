import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { systemRandom, uuidV7 } from "./runtime.js";
import { uuid } from "./validation/rules.js";

const timeOf = (id: string) => Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16);

describe("record ids (UUID version 7)", () => {
  it("carry the time in milliseconds, version 7 and the RFC 9562 variant, for any time and bytes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 1 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        (ms, random) => {
          const id = uuidV7(ms, random);
          expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
          expect(timeOf(id)).toBe(ms);
          // Every random bit outside the version and variant fields is kept.
          const hex = id.replaceAll("-", "");
          expect(Number.parseInt(hex.slice(13, 16), 16)).toBe(((random[0]! & 0x0f) << 8) | random[1]!);
          expect(hex.slice(18)).toBe(Buffer.from(random.subarray(3)).toString("hex"));
          expect(uuid.parse(id)).toBe(id);
        },
      ),
    );
  });

  it("sort by the time they were made", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 2 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        (ms, later, a, b) => {
          const second = Math.min(ms + later, 2 ** 48 - 1);
          expect(uuidV7(ms, a) < uuidV7(second, b)).toBe(true);
        },
      ),
    );
  });

  it("are new every time from the system source, and carry the current time", () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => systemRandom.uuid());
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [ids[0]!, ids.at(-1)!]) {
      expect(timeOf(id)).toBeGreaterThanOrEqual(before);
      expect(timeOf(id)).toBeLessThanOrEqual(after);
    }
  });
});
