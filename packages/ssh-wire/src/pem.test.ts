import { describe, expect, it } from "vitest";
import { fromPem, toPem } from "./pem.js";

describe("pem", () => {
  it("wraps at the given width and reads back", () => {
    const body = Uint8Array.from({ length: 100 }, (_, i) => i);
    const pem = toPem("TEST", body);
    const lines = pem.trimEnd().split("\n");
    expect(lines[0]).toBe("-----BEGIN TEST-----");
    expect(lines.at(-1)).toBe("-----END TEST-----");
    expect(lines.slice(1, -1).every((l) => l.length <= 64)).toBe(true);
    expect(lines[1]!.length).toBe(64);
    expect(toPem("TEST", body, 70).split("\n")[1]!.length).toBe(70);
    expect(fromPem("TEST", `junk\n${pem}junk`)).toEqual(body);
    expect(fromPem("TEST", pem.replace(/\n/g, "\r\n"))).toEqual(body);
  });

  it("returns undefined for a missing label or bad body", () => {
    expect(fromPem("OTHER", toPem("TEST", new Uint8Array([1])))).toBeUndefined();
    expect(fromPem("TEST", "-----BEGIN TEST-----\n!!\n-----END TEST-----\n")).toBeUndefined();
  });
});
