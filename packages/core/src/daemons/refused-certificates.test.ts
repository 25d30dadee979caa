import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { refusedCertificatesInput, refusedPerReport } from "./refused-certificates.js";

describe("refused certificates in a SyncDaemon report", () => {
  it(`takes at most ${refusedPerReport}, each a decimal serial with a known reason`, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: refusedPerReport + 20 }),
        fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }),
        fc.constantFrom("replayed", "other_target"),
        (count, serial, reason) => {
          const report = Array.from({ length: count }, () => ({ serial: serial.toString(), reason }));
          expect(refusedCertificatesInput.safeParse(report).success).toBe(count <= refusedPerReport);
        },
      ),
    );
  });

  it("refuses what is not a serial or a reason", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 30 }).filter((s) => !/^\d{1,20}$/.test(s)),
        (serial) => {
          expect(refusedCertificatesInput.safeParse([{ serial, reason: "replayed" }]).success).toBe(false);
        },
      ),
    );
    expect(refusedCertificatesInput.safeParse([{ serial: "1", reason: "stolen" }]).success).toBe(false);
  });
});
