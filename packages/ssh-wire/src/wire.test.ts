import { describe, expect, it } from "vitest";
import { toHex } from "./bytes.js";
import { SshReader, SshWriter } from "./wire.js";

const hex = (text: string) => Uint8Array.from(text.match(/../g) ?? [], (b) => Number.parseInt(b, 16));

describe("SshWriter", () => {
  // The examples of RFC 4251 section 5.
  it.each([
    ["00", "00000000"],
    ["09a378f9b2e332a7", "0000000809a378f9b2e332a7"],
    ["80", "000000020080"],
    ["0000ff", "0000000200ff"],
  ])("encodes mpint %s as %s", (value, expected) => {
    expect(toHex(new SshWriter().mpint(hex(value)).bytes())).toBe(expected);
  });

  it("encodes strings, uint32 and uint64", () => {
    const bytes = new SshWriter()
      .string("testing")
      .uint32(0x01020304)
      .uint64(2n ** 40n)
      .string(new Uint8Array())
      .bytes();
    expect(toHex(bytes)).toBe(
      `00000007${toHex(new TextEncoder().encode("testing"))}01020304000001000000000000000000`,
    );
    const reader = new SshReader(bytes);
    expect(reader.text()).toBe("testing");
    expect(reader.uint32()).toBe(0x01020304);
    expect(reader.uint64()).toBe(2n ** 40n);
    expect(reader.string().length).toBe(0);
    expect(reader.remaining).toBe(0);
    expect(() => reader.uint32()).toThrow(RangeError);
  });

  it("refuses out-of-range integers", () => {
    expect(() => new SshWriter().uint32(-1)).toThrow(RangeError);
    expect(() => new SshWriter().uint32(2 ** 32)).toThrow(RangeError);
    expect(() => new SshWriter().uint64(-1n)).toThrow(RangeError);
  });

  it("refuses a string longer than the data", () => {
    expect(() => new SshReader(hex("00000005abcd")).string()).toThrow(RangeError);
  });
});
